package drain

import "strconv"

// Signal is what the process was asked to do; cmd/turnd maps OS signals onto
// these values.
type Signal int

const (
	// Drain (SIGUSR1, coturn users' habit) starts a drain; it is ignored while
	// already draining.
	Drain Signal = iota
	// Terminate (SIGTERM and SIGINT) starts a drain; a second Terminate during
	// a drain stops at once.
	Terminate
	// Quit (SIGQUIT) stops at once, in any phase.
	Quit
)

// String returns "drain", "terminate" or "quit".
func (s Signal) String() string {
	switch s {
	case Drain:
		return "drain"
	case Terminate:
		return "terminate"
	case Quit:
		return "quit"
	}
	return "signal(" + strconv.Itoa(int(s)) + ")"
}
