package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/turnd/turnd/bench/procstat"
)

// rampStep is one load of the netns ramp: processes uclients started
// together, each with clients clients sending messages messages of 100
// bytes, 2 ms apart, without RTCP allocations (-c: one allocation per
// client; without it turnd answered parallel uclients 486 with every quota
// of the config off, which leaves its cap of 8 EVEN-PORT reservations per
// user). One uclient sends no more than about 5 k messages/s
// each way here, whatever its client count (its clients take turns in one
// loop), and makes its allocations one every 0.1 s; so the rate steps up
// by processes, not clients (each step's allocations take 2.6 s), and the
// messages per client shrink as processes grow, so every step sends
// about as much and lasts about as long.
type rampStep struct{ processes, clients, messages int }

// netnsRamp is the ramp; the first step is the reference load, at which
// every server's CPU is compared. It stops at the first step that loses a
// message.
func netnsRamp() []rampStep {
	return []rampStep{{2, 26, 1000}, {4, 26, 500}, {8, 26, 250}, {12, 26, 170}, {16, 26, 125}}
}

// uclientStepTimeout bounds one uclient of a step.
const uclientStepTimeout = 40 * time.Second

// windowRecorder keeps, for each uclient of a step, the reading at its
// latest candidate start of sending and at its totals; the step's window
// runs from the earliest start to the latest end.
type windowRecorder struct {
	take   func() cpuSnapshot
	mu     sync.Mutex
	starts map[int]cpuSnapshot
	ends   map[int]cpuSnapshot
}

func (r *windowRecorder) mark(i int, end bool) {
	s := r.take()
	r.mu.Lock()
	defer r.mu.Unlock()
	if end {
		r.ends[i] = s
	} else {
		r.starts[i] = s
	}
}

// window returns the step's first and last readings; ok is false unless
// every uclient reached its totals.
func (r *windowRecorder) window(n int) (a, b cpuSnapshot, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ends) != n || len(r.starts) != n {
		return a, b, false
	}
	for i := range n {
		if s := r.starts[i]; a.at.IsZero() || s.at.Before(a.at) {
			a = s
		}
		if s := r.ends[i]; s.at.After(b.at) {
			b = s
		}
	}
	return a, b, true
}

// takeSnapshot reads the machine, every user process and the NAPI
// threads. A NAPI thread's time comes from /proc/PID/schedstat (its run
// time, which /proc/PID/stat's utime+stime are scaled to).
func takeSnapshot(kthreads []int) cpuSnapshot {
	s := cpuSnapshot{at: time.Now(), kthreads: make(map[int]time.Duration, len(kthreads))}
	s.machine, _ = readCPUTimes()
	s.statAt = time.Now()
	s.procs, _ = procstat.UserProcessTimes()
	for _, pid := range kthreads {
		if d, err := procstat.RunTime(pid); err == nil {
			s.kthreads[pid] = d
		}
	}
	s.at = time.Now()
	return s
}

// clientPortWindow is how many local ports each step's uclients get.
const clientPortWindow = 10000

// portWindow is the range of local ports of a server's step i (0 first):
// uclient never releases its allocations, so a client socket on a port an
// earlier step used would meet that step's allocation on the server (437,
// or 400 to its ChannelBind); disjoint ranges keep every step's 5-tuples
// new. Six steps fit below 65536.
func portWindow(i int) (lo, hi int) {
	lo = 1024 + (i%6)*clientPortWindow
	return lo, lo + clientPortWindow - 1
}

// clientPorts sets the client namespace's local port range for step i.
func clientPorts(ns string, i int) error {
	lo, hi := portWindow(i)
	return inNetns(ns, func() error {
		// /proc/sys/net shows the namespace of the thread that opens it.
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_local_port_range", []byte(fmt.Sprintf("%d %d", lo, hi)), 0); err != nil {
			return fmt.Errorf("client port range: %w", err)
		}
		return nil
	})
}

// netnsLoad is what one step needs besides its shape.
type netnsLoad struct {
	// steps counts the steps run against the current server (portWindow).
	steps    *int
	uclient  string
	toolErr  io.Writer
	topo     topology
	srv      *server
	peerPID  int
	loadNAPI []int
	srvNAPI  []int
}

// runStep runs one ramp step against the server and charges the machine's
// CPU over its window.
func runStep(ctx context.Context, l netnsLoad, st rampStep) NetnsStep {
	step := NetnsStep{Processes: st.processes, Clients: st.clients}
	if err := clientPorts(l.topo.client, *l.steps); err != nil {
		step.Error = err.Error()
		return step
	}
	*l.steps++
	rec := &windowRecorder{
		take:   func() cpuSnapshot { return takeSnapshot(append(append([]int{}, l.loadNAPI...), l.srvNAPI...)) },
		starts: map[int]cpuSnapshot{}, ends: map[int]cpuSnapshot{},
	}
	type outcome struct {
		res uclientResult
		pid int
		cpu time.Duration
		err error
	}
	outs := make([]outcome, st.processes)
	var wg sync.WaitGroup
	for i := range st.processes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Piped, uclient's stdout is block-buffered: its progress lines
			// would come in bursts, late, and misplace the window. stdbuf
			// execs it line-buffered (the PID stays uclient's).
			argv := []string{"ip", "netns", "exec", l.topo.client, "stdbuf", "-oL", l.uclient,
				"-u", benchUser, "-w", benchPass, "-e", peerIP, "-r", strconv.Itoa(netnsPeerPort), "-X", "-c",
				"-m", strconv.Itoa(st.clients), "-n", strconv.Itoa(st.messages), "-l", "100", "-z", "2",
				"-p", strconv.Itoa(netnsPort), turndClientIP}
			w := &uclientWatcher{sample: l.srv.sample, marked: func(end bool) { rec.mark(i, end) }}
			o := &outs[i]
			o.cpu, o.err = runToolStarted(ctx, uclientStepTimeout, l.toolErr, func(pid int) { o.pid = pid }, w.consume, argv...)
			res, err := w.result()
			o.res = res
			switch {
			case o.err == nil:
				o.err = err
			case err == nil: // totals printed, then a failure: say what uclient said last
				o.err = fmt.Errorf("%w; last lines: %q", o.err, tail(w.lines, 3))
			default:
				o.err = fmt.Errorf("%w (%w)", err, o.err)
			}
		}()
	}
	wg.Wait()
	roles := cpuRoles{server: l.srv.pid(), runner: os.Getpid(), loadGen: []int{l.peerPID}, exited: map[int]time.Duration{},
		loadNAPI: l.loadNAPI, serverNAPI: l.srvNAPI}
	var errs []error
	for _, o := range outs {
		step.Sent += o.res.Sent
		step.Received += o.res.Received
		step.Lost += o.res.Lost
		if o.pid != 0 {
			roles.loadGen = append(roles.loadGen, o.pid)
			roles.exited[o.pid] = o.cpu
		}
		if o.err != nil {
			errs = append(errs, o.err)
		}
	}
	if len(errs) > 0 {
		step.Error = fmt.Sprintf("%d of %d uclients failed; the first: %v", len(errs), st.processes, errs[0])
	}
	if a, b, ok := rec.window(st.processes); ok {
		step.WindowS = b.at.Sub(a.at).Seconds()
		step.CPU = splitCPU(a, b, roles)
	} else if step.Error == "" {
		step.Error = "a uclient printed no totals"
	}
	step.settle()
	return step
}
