package drain_test

import (
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/drain"
)

func TestScenarios(t *testing.T) {
	const (
		sec  = time.Second
		hour = time.Hour
	)
	tests := []struct {
		name           string
		delay, timeout time.Duration
		count          int
		steps          []step
		result         drain.Result
	}{
		{
			name: "idle terminate drains at once", timeout: hour,
			steps:  []step{sig(drain.Terminate).then(draining(false, 0), stopped(0))},
			result: drain.Result{Reason: drain.Drained, Trigger: drain.Terminate},
		},
		{
			name: "idle drain signal drains at once", timeout: hour,
			steps:  []step{sig(drain.Drain).then(draining(false, 0), stopped(0))},
			result: drain.Result{Reason: drain.Drained, Trigger: drain.Drain},
		},
		{
			name: "allocations release then drained in the same event", timeout: hour, count: 2,
			steps: []step{
				sig(drain.Terminate).then(draining(false, 2)),
				set(1).then(draining(false, 1)),
				advance(3 * sec),
				set(0).then(draining(false, 0), stopped(0)),
			},
			result: drain.Result{Reason: drain.Drained, Trigger: drain.Terminate, AtStart: 2, Duration: 3 * sec},
		},
		{
			name: "deadline forces with remaining", delay: sec, timeout: 5 * sec, count: 3,
			steps: []step{
				sig(drain.Terminate).then(draining(true, 3)),
				advance(sec).then(draining(false, 3)),
				set(2).then(draining(false, 2)),
				advance(5*sec - time.Nanosecond),
				advance(time.Nanosecond).then(stopped(2)),
			},
			result: drain.Result{Reason: drain.DeadlineExpired, Trigger: drain.Terminate, AtStart: 3, Remaining: 2, Duration: 6 * sec},
		},
		{
			name: "one advance past delay and deadline", delay: sec, timeout: 5 * sec, count: 3,
			steps: []step{
				sig(drain.Terminate).then(draining(true, 3)),
				advance(hour).then(draining(false, 3), stopped(3)),
			},
			result: drain.Result{Reason: drain.DeadlineExpired, Trigger: drain.Terminate, AtStart: 3, Remaining: 3, Duration: hour},
		},
		{
			name: "delay then refuse", delay: 2 * sec, timeout: hour, count: 1,
			steps: []step{
				sig(drain.Terminate).then(draining(true, 1)),
				accepting(true),
				set(2).then(draining(true, 2)),
				advance(2 * sec).then(draining(false, 2)),
				accepting(false),
				set(0).then(draining(false, 0), stopped(0)),
			},
			result: drain.Result{Reason: drain.Drained, Trigger: drain.Terminate, AtStart: 1, Duration: 2 * sec},
		},
		{
			name: "count zero during delay does not stop", delay: 2 * sec, timeout: hour, count: 1,
			steps: []step{
				sig(drain.Terminate).then(draining(true, 1)),
				set(0).then(draining(true, 0)),
				advance(sec),
				set(1).then(draining(true, 1)),
				set(0).then(draining(true, 0)),
				advance(sec).then(draining(false, 0), stopped(0)),
			},
			result: drain.Result{Reason: drain.Drained, Trigger: drain.Terminate, AtStart: 1, Duration: 2 * sec},
		},
		{
			name: "idle with delay waits for the delay", delay: 2 * sec, timeout: hour,
			steps: []step{
				sig(drain.Terminate).then(draining(true, 0)),
				advance(2*sec).then(draining(false, 0), stopped(0)),
			},
			result: drain.Result{Reason: drain.Drained, Trigger: drain.Terminate, Duration: 2 * sec},
		},
		{
			name: "second terminate during delay stops at once", delay: sec, timeout: hour, count: 2,
			steps: []step{
				sig(drain.Terminate).then(draining(true, 2)),
				sig(drain.Terminate).then(stopped(2)),
			},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Terminate, AtStart: 2, Remaining: 2},
		},
		{
			name: "second terminate after delay stops at once", delay: sec, timeout: hour, count: 2,
			steps: []step{
				sig(drain.Terminate).then(draining(true, 2)),
				advance(sec).then(draining(false, 2)),
				set(1).then(draining(false, 1)),
				advance(10 * sec),
				sig(drain.Terminate).then(stopped(1)),
			},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Terminate, AtStart: 2, Remaining: 1, Duration: 11 * sec},
		},
		{
			name: "second terminate while idle in delay stops at once", delay: sec, timeout: hour,
			steps: []step{
				sig(drain.Terminate).then(draining(true, 0)),
				sig(drain.Terminate).then(stopped(0)),
			},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Terminate},
		},
		{
			// The second Drain changes nothing: the next change seen is the count's.
			name: "drain then drain is ignored", timeout: 10 * sec, count: 2,
			steps: []step{
				sig(drain.Drain).then(draining(false, 2)),
				sig(drain.Drain),
				set(1).then(draining(false, 1)),
				advance(10 * sec).then(stopped(1)),
			},
			result: drain.Result{Reason: drain.DeadlineExpired, Trigger: drain.Drain, AtStart: 2, Remaining: 1, Duration: 10 * sec},
		},
		{
			// Documented choice: SIGTERM cuts short a drain started by SIGUSR1.
			name: "drain then terminate stops at once", delay: sec, timeout: hour, count: 2,
			steps: []step{
				sig(drain.Drain).then(draining(true, 2)),
				advance(sec).then(draining(false, 2)),
				sig(drain.Terminate).then(stopped(2)),
			},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Drain, AtStart: 2, Remaining: 2, Duration: sec},
		},
		{
			name: "terminate then drain is ignored", timeout: hour, count: 1,
			steps: []step{
				sig(drain.Terminate).then(draining(false, 1)),
				sig(drain.Drain),
				set(0).then(draining(false, 0), stopped(0)),
			},
			result: drain.Result{Reason: drain.Drained, Trigger: drain.Terminate, AtStart: 1},
		},
		{
			name: "quit while serving", delay: sec, timeout: hour, count: 4,
			steps:  []step{sig(drain.Quit).then(stopped(4))},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Quit, AtStart: 4, Remaining: 4},
		},
		{
			name: "quit during delay", delay: sec, timeout: hour, count: 4,
			steps: []step{
				sig(drain.Terminate).then(draining(true, 4)),
				sig(drain.Quit).then(stopped(4)),
			},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Terminate, AtStart: 4, Remaining: 4},
		},
		{
			name: "quit after delay", delay: sec, timeout: hour, count: 4,
			steps: []step{
				sig(drain.Drain).then(draining(true, 4)),
				advance(3 * sec).then(draining(false, 4)),
				sig(drain.Quit).then(stopped(4)),
			},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Drain, AtStart: 4, Remaining: 4, Duration: 3 * sec},
		},
		{
			name: "timeout zero stops at once", timeout: 0, count: 2,
			steps:  []step{sig(drain.Terminate).then(stopped(2))},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Terminate, AtStart: 2, Remaining: 2},
		},
		{
			name: "timeout zero ignores the delay", delay: sec, timeout: 0, count: 2,
			steps:  []step{sig(drain.Drain).then(stopped(2))},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Drain, AtStart: 2, Remaining: 2},
		},
		{
			name: "timeout zero while idle", timeout: 0,
			steps:  []step{sig(drain.Terminate).then(stopped(0))},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Terminate},
		},
		{
			name: "cancel while serving", delay: sec, timeout: hour, count: 3,
			steps:  []step{cancel().then(stopped(3))},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Quit, AtStart: 3, Remaining: 3},
		},
		{
			name: "cancel while draining", delay: sec, timeout: hour, count: 3,
			steps: []step{
				sig(drain.Terminate).then(draining(true, 3)),
				advance(2 * sec).then(draining(false, 3)),
				cancel().then(stopped(3)),
			},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Terminate, AtStart: 3, Remaining: 3, Duration: 2 * sec},
		},
		{
			name: "closed signal channel keeps draining", timeout: hour, count: 1,
			steps: []step{
				sig(drain.Terminate).then(draining(false, 1)),
				closeSignals(),
				set(0).then(draining(false, 0), stopped(0)),
			},
			result: drain.Result{Reason: drain.Drained, Trigger: drain.Terminate, AtStart: 1},
		},
		{
			name: "closed signal channel keeps serving", timeout: hour, count: 1,
			steps: []step{
				closeSignals(),
				set(0),
				advance(hour),
				accepting(true),
				cancel().then(stopped(0)),
			},
			result: drain.Result{Reason: drain.Immediate, Trigger: drain.Quit},
		},
		{
			name: "allocations while serving cause no change", timeout: hour, count: 1,
			steps: []step{
				set(5),
				set(2),
				sig(drain.Terminate).then(draining(false, 2)),
				set(0).then(draining(false, 0), stopped(0)),
			},
			result: drain.Result{Reason: drain.Drained, Trigger: drain.Terminate, AtStart: 2},
		},
		{
			name: "unknown signal is ignored", timeout: hour,
			steps: []step{
				sig(drain.Signal(42)),
				sig(drain.Terminate).then(draining(false, 0), stopped(0)),
			},
			result: drain.Result{Reason: drain.Drained, Trigger: drain.Terminate},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.delay, tt.timeout, tt.count)
			if s := h.m.Status(); s.Phase != drain.Serving || !s.Accepting || !h.m.Accepting() {
				t.Fatalf("initial status %+v, Accepting() %v", s, h.m.Accepting())
			}
			var last drain.Status
			for i, st := range tt.steps {
				st.do(h)
				for j, w := range st.want {
					got := h.next()
					if g := (want{got.Phase, got.Accepting, got.Allocations}); g != w {
						t.Fatalf("step %d (%s) change %d: got %+v, want %+v", i, st.name, j, g, w)
					}
					checkStatus(t, h, got)
					last = got
				}
			}
			res := h.wait()
			if res != tt.result {
				t.Errorf("Result = %+v, want %+v", res, tt.result)
			}
			if last.Phase != drain.Stopped || last.Trigger != res.Trigger {
				t.Errorf("last change %+v does not match result %+v", last, res)
			}
			if s := h.m.Status(); s != last {
				t.Errorf("Status() = %+v after stop, last change was %+v", s, last)
			}
			if h.m.Accepting() {
				t.Error("Accepting() true after stop")
			}
			select {
			case s := <-h.changes:
				t.Errorf("unexpected change %+v", s)
			default:
			}
			if n := h.clock.Pending(); n != 0 {
				t.Errorf("%d timers left pending after Run returned", n)
			}
		})
	}
}

// checkStatus checks what every published status must satisfy: Accepting()
// already agrees with a refusal (it never turns true again, so a later change
// cannot make this racy), and the drain's times fit the configuration.
func checkStatus(t *testing.T, h *harness, s drain.Status) {
	t.Helper()
	if !s.Accepting && h.m.Accepting() {
		t.Errorf("Accepting() true with published %+v", s)
	}
	if s.Started.Before(epoch) {
		t.Errorf("Started %v before the clock's start", s.Started)
	}
	if s.Phase == drain.Draining {
		if want := s.Started.Add(h.cfg.Delay + h.cfg.Timeout); !s.Deadline.Equal(want) {
			t.Errorf("Deadline = %v, want %v", s.Deadline, want)
		}
	}
	if s.Deadline.Before(s.Started) {
		t.Errorf("Deadline %v before Started %v", s.Deadline, s.Started)
	}
}
