package drain

import (
	"strconv"
	"time"
)

// Phase is where the machine is in its life.
type Phase int

const (
	// Serving is normal operation.
	Serving Phase = iota
	// Draining means a drain has started: readiness must fail, and new
	// allocations are refused once the delay has passed.
	Draining
	// Stopped is final: the caller closes whatever allocations remain.
	Stopped
)

// String returns "serving", "draining" or "stopped".
func (p Phase) String() string {
	switch p {
	case Serving:
		return "serving"
	case Draining:
		return "draining"
	case Stopped:
		return "stopped"
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}

// Reason says why the machine stopped.
type Reason int

const (
	// Drained means every allocation ended on its own.
	Drained Reason = iota
	// DeadlineExpired means the deadline passed with allocations still live.
	DeadlineExpired
	// Immediate means a stop without waiting: Quit, a second Terminate, a
	// drain with no graceful period (Timeout 0), or a cancelled context.
	Immediate
)

// String returns "drained", "deadline" or "immediate".
func (r Reason) String() string {
	switch r {
	case Drained:
		return "drained"
	case DeadlineExpired:
		return "deadline"
	case Immediate:
		return "immediate"
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Status is a snapshot of the machine, as seen by probes and logs.
type Status struct {
	// Phase is the current phase.
	Phase Phase
	// Accepting reports whether new allocations are accepted: while serving,
	// and while draining within Delay.
	Accepting bool
	// Trigger is what started the drain; valid when not serving. A stop
	// straight from serving caused by a cancelled context reports Quit.
	Trigger Signal
	// Started is when the drain started (or, for a stop straight from
	// serving, when it stopped); zero while serving.
	Started time.Time
	// Deadline is Started+Delay+Timeout, or Started when the machine stopped
	// without a graceful period; zero while serving.
	Deadline time.Time
	// Allocations is the live allocation count at the last update. The machine
	// watches the count only from the start of a drain, so it is zero while
	// serving; read the allocation table itself for a serving count.
	Allocations int
}

// Result is how Run ended.
type Result struct {
	// Reason is why the machine stopped.
	Reason Reason
	// Trigger is what started the drain (see Status.Trigger).
	Trigger Signal
	// AtStart is the allocation count when the drain started (when it stopped,
	// for a stop straight from serving).
	AtStart int
	// Remaining is the allocation count when the machine stopped; the caller
	// force-closes those allocations.
	Remaining int
	// Duration is the time from drain start to stop; 0 if it never drained.
	Duration time.Duration
}
