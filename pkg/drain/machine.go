package drain

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Machine is the lifecycle state machine. Create it with New, drive it with
// Run (once), and read it from any goroutine with Status and Accepting.
type Machine struct {
	cfg       Config
	accepting atomic.Bool

	mu     sync.Mutex
	status Status

	started atomic.Bool
	done    chan struct{}
	result  Result // written by the first Run before done is closed
}

// New returns a serving Machine.
func New(cfg Config) *Machine {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock()
	}
	if cfg.Allocations == nil {
		cfg.Allocations = noAllocations{}
	}
	cfg.Delay = max(cfg.Delay, 0)
	cfg.Timeout = max(cfg.Timeout, 0)
	m := &Machine{
		cfg:    cfg,
		status: Status{Phase: Serving, Accepting: true},
		done:   make(chan struct{}),
	}
	m.accepting.Store(true)
	return m
}

// Status returns the current status. It is safe from any goroutine.
func (m *Machine) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// Accepting reports whether new allocations are accepted. It is safe from any
// goroutine and lock-free, because it is called on every Allocate request.
func (m *Machine) Accepting() bool { return m.accepting.Load() }

// Run drives the machine until it stops: on signals from the channel,
// allocation changes and the clock. A closed signals channel means no more
// signals, not a stop. Cancelling ctx (another component failed) stops the
// machine with Reason Immediate. Run is meant to be called once; a later call
// waits for the first to finish and returns the same Result.
func (m *Machine) Run(ctx context.Context, signals <-chan Signal) Result {
	if !m.started.CompareAndSwap(false, true) {
		<-m.done
		return m.result
	}
	defer close(m.done)
	r := run{m: m, st: m.Status()}
	m.result = r.loop(ctx, signals)
	return m.result
}

// run is the state owned by Run's goroutine; only publish shares it.
type run struct {
	m       *Machine
	st      Status
	atStart int
	timer   Timer // the delay timer, then the deadline timer; nil while serving
	stopped bool
	result  Result
}

func (r *run) loop(ctx context.Context, signals <-chan Signal) Result {
	defer func() {
		if r.timer != nil {
			r.timer.Stop()
		}
	}()
	for !r.stopped {
		// Allocation changes and timers matter only once draining, so a
		// serving machine costs nothing per allocation.
		var changed <-chan struct{}
		var fired <-chan time.Time
		if r.st.Phase == Draining {
			changed = r.m.cfg.Allocations.Changed()
			fired = r.timer.C()
		}
		select {
		case <-ctx.Done():
			r.stop(Immediate, Quit, r.count())
		case sig, ok := <-signals:
			if !ok {
				signals = nil // a nil channel blocks forever: no more signals
				continue
			}
			r.signal(sig)
		case <-changed:
			r.countChanged()
		case <-fired:
			r.timerFired()
		}
	}
	return r.result
}

func (r *run) signal(sig Signal) {
	switch {
	case sig == Quit:
		r.stop(Immediate, sig, r.count())
	case r.st.Phase == Serving && (sig == Drain || sig == Terminate):
		r.startDrain(sig)
	case r.st.Phase == Draining && sig == Terminate:
		// Whatever started the drain: see the package doc.
		r.stop(Immediate, sig, r.count())
	}
	// Drain while draining, and unknown signals, are ignored.
}

func (r *run) startDrain(sig Signal) {
	cfg := r.m.cfg
	now := cfg.Clock.Now()
	var n int
	if cfg.Delay == 0 {
		// Refuse and count in one step: an Allocate admitted before the
		// flip is live by the count, not granted and then closed with the
		// server.
		n = r.refuse()
	} else {
		n = r.count()
	}
	if cfg.Timeout == 0 {
		r.stop(Immediate, sig, n)
		return
	}
	r.atStart = n
	r.st.Phase = Draining
	r.st.Trigger = sig
	r.st.Started = now
	r.st.Deadline = now.Add(cfg.Delay + cfg.Timeout)
	r.st.Allocations = n
	if cfg.Delay > 0 {
		// Lame duck: readiness fails (Phase is Draining) but allocations are
		// still accepted until the delay ends, even if none are live.
		r.timer = cfg.Clock.NewTimer(cfg.Delay)
		r.publish()
		return
	}
	r.timer = cfg.Clock.NewTimer(cfg.Timeout)
	r.publish()
	if n == 0 {
		r.stop(Drained, sig, 0)
	}
}

// refuse stops new allocations at once, ahead of the publish that reports
// it, and returns the count taken in the same step as the refusal
// (Allocations.StopAdmitting): it includes every allocation ever admitted.
func (r *run) refuse() int {
	r.st.Accepting = false
	r.m.accepting.Store(false)
	return r.m.cfg.Allocations.StopAdmitting()
}

// timerFired handles the end of the delay (while still accepting) or the
// deadline (after).
func (r *run) timerFired() {
	clock := r.m.cfg.Clock
	if r.st.Accepting {
		// Counted here as well: no change notification may ever come (an
		// idle server), and one arriving now is folded into this update.
		r.st.Allocations = r.refuse()
		// The deadline timer is armed from the time the delay timer actually
		// fired, so a late delay does not push the deadline back; a deadline
		// already due fires at once.
		r.timer = clock.NewTimer(r.st.Deadline.Sub(clock.Now()))
		r.publish()
		if r.st.Allocations == 0 {
			r.stop(Drained, r.st.Trigger, 0)
		}
		return
	}
	n := r.count()
	if n == 0 {
		// The last allocation ended as the deadline came, and its
		// notification is still queued: nothing is forced, so it drained.
		r.stop(Drained, r.st.Trigger, 0)
		return
	}
	r.stop(DeadlineExpired, r.st.Trigger, n)
}

func (r *run) countChanged() {
	n := r.count()
	if n == r.st.Allocations {
		return // coalesced notifications can outrun the count
	}
	r.st.Allocations = n
	r.publish()
	if n == 0 && !r.st.Accepting {
		r.stop(Drained, r.st.Trigger, 0)
	}
}

// stop moves to Stopped. trigger is recorded only when stopping straight from
// serving; a drain keeps the trigger that started it.
func (r *run) stop(reason Reason, trigger Signal, remaining int) {
	now := r.m.cfg.Clock.Now()
	if r.st.Accepting {
		r.m.cfg.Allocations.StopAdmitting() // the server closes next: nothing new may start
	}
	if r.st.Phase == Serving {
		r.st.Trigger = trigger
		r.st.Started = now
		r.st.Deadline = now
		r.atStart = remaining
	}
	r.st.Phase = Stopped
	r.st.Accepting = false
	r.st.Allocations = remaining
	r.publish()
	r.stopped = true
	r.result = Result{
		Reason:    reason,
		Trigger:   r.st.Trigger,
		AtStart:   r.atStart,
		Remaining: remaining,
		Duration:  now.Sub(r.st.Started),
	}
}

func (r *run) count() int { return r.m.cfg.Allocations.Count() }

// publish makes r.st visible. The atomic is stored first so that anyone told
// of a change through OnChange already sees it in Accepting.
func (r *run) publish() {
	r.m.accepting.Store(r.st.Accepting)
	r.m.mu.Lock()
	r.m.status = r.st
	r.m.mu.Unlock()
	if r.m.cfg.OnChange != nil {
		r.m.cfg.OnChange(r.st)
	}
}
