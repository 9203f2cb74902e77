package main

import (
	"context"
	"sync"
	"time"
)

// runAlloc is an allocation burst: o.clients clients, o.concurrency at a
// time, each allocates once (the 401 round included) and releases at once.
// The rate counts successful allocations over the whole burst.
func runAlloc(ctx context.Context, o options) (*report, error) {
	rep := &report{Mode: o.mode, Server: o.server.String(), Clients: o.clients}
	probe := serverProbe{pid: o.serverPID}
	srv0, srvOK := probe.sample()
	self0 := selfCPU()
	start := time.Now()

	var allocErrs, releaseErrs errorCounts
	var mu sync.Mutex
	var lat hist
	forEach(ctx, o.clients, o.concurrency, func(i int) {
		s, err := dialSession(i, &o, false)
		if err != nil {
			allocErrs.add(err)
			return
		}
		defer s.close()
		t0 := time.Now()
		if err := s.allocate(o.lifetime); err != nil {
			allocErrs.add(err)
			return
		}
		d := time.Since(t0)
		mu.Lock()
		lat.add(d)
		mu.Unlock()
		if err := s.release(); err != nil {
			releaseErrs.add(err)
		}
	})
	elapsed := time.Since(start)
	selfUsed := selfCPU() - self0

	ok := int(lat.n)
	rep.Setup = setupReport{OK: ok, Failed: allocErrs.n, Seconds: elapsed.Seconds(), Errors: allocErrs.m}
	a := &allocReport{Seconds: elapsed.Seconds(), ReleaseFailed: releaseErrs.n, ReleaseErrors: releaseErrs.m,
		LatencyP50Ms: ms(lat.quantile(0.5)), LatencyP99Ms: ms(lat.quantile(0.99)), LatencyMaxMs: ms(lat.max)}
	if elapsed > 0 {
		a.PerSecond = float64(ok) / elapsed.Seconds()
	}
	rep.Self = cpuReport{CPUSeconds: selfUsed.Seconds()}
	if rep.Process = probe.window(srv0, srvOK, 0); rep.Process != nil && ok > 0 {
		a.ServerCPUPerUS = rep.Process.CPUSeconds * 1e6 / float64(ok)
	}
	rep.Alloc = a
	if ok == 0 {
		return rep, errNoClients
	}
	return rep, ctx.Err()
}
