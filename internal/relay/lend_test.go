package relay

import (
	"errors"
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/bindings"
)

// TestLendGivesTheSocketsOwnDescriptors: what Lend returns is the relay
// socket itself (bound to the relayed address), only while paused, -1 for
// a family the route lacks; a successor adopting a copy of it relays.
func TestLendGivesTheSocketsOwnDescriptors(t *testing.T) {
	a := newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1)})
	relayed := a.open(t, bindings.Want{Families: bindings.V4}).Addr[0]
	if _, err := a.routes.Lend(a.route); !errors.Is(err, ErrNotPaused) {
		t.Fatalf("lend unpaused: %v, want ErrNotPaused", err)
	}
	pause(t, a.rl)
	defer a.rl.Resume()
	fds, err := a.routes.Lend(a.route)
	if err != nil {
		t.Fatal(err)
	}
	if fds[1] != -1 || fds[0] != a.sock(0).Socket.Fd() {
		t.Fatalf("lent %v, want the IPv4 socket's own descriptor %d and -1", fds, a.sock(0).Socket.Fd())
	}
	sa, err := unix.Getsockname(fds[0])
	if err != nil || sa.(*unix.SockaddrInet4).Port != int(relayed.Port()) {
		t.Fatalf("lent descriptor bound to %v (%v), want %v", sa, err, relayed)
	}
	// What a successor receives is a copy of it: it adopts as from Export.
	dup, err := unix.FcntlInt(uintptr(fds[0]), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(dup), "lent")
	defer f.Close()
	b := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000})
	t.Cleanup(b.Close)
	rB := &bindings.Route{Client: bindings.Client{Tuple: a.route.Client.Tuple, Lane: dupLane(t, a.lane)}}
	got, err := b.Routes().Adopt(rB, bindings.Want{Families: bindings.V4}, RouteFiles{f})
	if err != nil || got.Addr[0] != relayed {
		t.Fatalf("adopt the lent socket: %v, %v; want %v", got.Addr, err, relayed)
	}
	b.Routes().Close(rB, bindings.Both)
}
