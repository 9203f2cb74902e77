package offload

import (
	"errors"
	"fmt"
)

// ErrUnsupported is wrapped by every reason the kernel path cannot run here.
var ErrUnsupported = errors.New("kernel fast path unsupported")

// The reasons, each wrapping ErrUnsupported.
var (
	ErrNoTCX       = fmt.Errorf("%w: the kernel has no tcx (Linux 6.6 or later)", ErrUnsupported)
	ErrPrivilege   = fmt.Errorf("%w: needs CAP_BPF and CAP_NET_ADMIN", ErrUnsupported)
	ErrVerifier    = fmt.Errorf("%w: the kernel refused the program", ErrUnsupported)
	ErrForwarding  = fmt.Errorf("%w: forwarding is off on lo (net.ipv4.conf.lo.forwarding, net.ipv6.conf.lo.forwarding), which the kernel's route lookup for the program needs", ErrUnsupported)
	ErrNoInterface = fmt.Errorf("%w: no interface to attach to", ErrUnsupported)
)

var (
	// ErrInterface is returned by Open for a named interface that is
	// missing, down or not Ethernet.
	ErrInterface = errors.New("interface unusable for the kernel path")
	// ErrInvalidEntry is returned by Put and Delete for an entry the
	// program could not relay (mixed families on one side, a channel
	// number outside 0x4000-0x7FFF, a zero port, a slot out of range).
	ErrInvalidEntry = errors.New("invalid offload entry")
	// ErrNoSlot is returned by NewSlot when every counter slot is in use.
	ErrNoSlot = errors.New("no free counter slot")
	// ErrClosed is returned by a Path's methods after Close.
	ErrClosed = errors.New("offload path closed")
)
