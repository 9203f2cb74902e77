package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

// runIdle holds o.clients allocations, each with a channel bound to the
// peer, for o.duration without data, renewing them every o.refresh; with
// --server-pid it reports the server's RSS per held allocation, measured at
// the end of the hold against a sample taken before the first allocation.
func runIdle(ctx context.Context, o options, progress io.Writer) (*report, error) {
	rep := &report{Mode: o.mode, Server: o.server.String(), Clients: o.clients}
	peer, ech, err := peerFor(&o)
	if err != nil {
		return rep, err
	}
	if ech != nil {
		defer ech.stop()
	}
	probe := serverProbe{pid: o.serverPID}
	base, baseOK := probe.sample()
	self0 := selfCPU()
	sessions, setup := setupSessions(ctx, &o, false, func(s *session) error {
		if err := s.allocate(o.lifetime); err != nil {
			return err
		}
		return s.bind(peer)
	})
	rep.Setup = setup
	if len(sessions) == 0 {
		return rep, errNoClients
	}
	x := &idleReport{Held: len(sessions)}
	rep.Idle = x
	afterSetup, _ := probe.sample()
	fmt.Fprintf(progress, "turnload: idle: holding %d allocations for %v\n", len(sessions), o.duration)

	start := time.Now()
	hold := time.NewTimer(o.duration)
	tick := time.NewTicker(o.refresh)
	for done := false; !done; {
		select {
		case <-hold.C:
			done = true
		case <-ctx.Done():
			done = true
		case <-tick.C:
			var errs errorCounts
			forEach(ctx, len(sessions), o.concurrency, func(i int) {
				if err := sessions[i].refresh(o.lifetime); err != nil {
					errs.add(err)
				} else if err := sessions[i].bind(peer); err != nil {
					errs.add(err)
				}
			})
			x.Refreshes++
			x.RefreshFailed += errs.n
		}
	}
	hold.Stop()
	tick.Stop()
	x.HoldSeconds = time.Since(start).Seconds()
	rep.Process = probe.window(base, baseOK, 0)
	if rep.Process != nil {
		x.BaselineRSSKB, x.SetupRSSKB, x.HeldRSSKB = base.RSSKB, afterSetup.RSSKB, rep.Process.RSSKB
		x.RSSPerAllocKB = float64(x.HeldRSSKB-x.BaselineRSSKB) / float64(x.Held)
	}
	x.ReleasedFailed = releaseAll(&o, sessions).n
	rep.Self = cpuReport{CPUSeconds: (selfCPU() - self0).Seconds()}
	return rep, ctx.Err()
}
