package server_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/server"
)

// handOver freezes from, builds a successor on its state and
// descriptors, commits and starts it: the whole switch, in one process.
func handOver(t *testing.T, from *server.Server, opts server.Options) *server.Server {
	t.Helper()
	f := freeze(t, from)
	to := successor(t, f, opts)
	f.Commit()
	to.Start()
	return to
}

// freeze freezes s, and thaws it when the test ends unless it committed
// (a failed test must not leave the server frozen).
func freeze(t *testing.T, s *server.Server) *server.Frozen {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	f, err := s.Freeze(ctx)
	if err != nil {
		t.Fatalf("freeze: %v", err)
	}
	t.Cleanup(f.Thaw)
	return f
}

// successor builds, not starts, a server on f's state and descriptors, as
// a successor process would, and closes it when the test ends.
func successor(t *testing.T, f *server.Frozen, opts server.Options) *server.Server {
	t.Helper()
	opts.Inherit = inherit(t, f)
	s, err := server.New(opts)
	if err != nil {
		f.Thaw()
		t.Fatalf("successor: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// inherit is what a successor process would receive of f: its files, and
// copies of the descriptors it lends.
func inherit(t *testing.T, f *server.Frozen) *server.Inherit {
	t.Helper()
	in := &server.Inherit{State: f.State, Files: f.Files}
	for _, fd := range f.Fds {
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		in.Relays = append(in.Relays, os.NewFile(uintptr(dup), "relay"))
	}
	t.Cleanup(func() {
		for _, r := range in.Relays {
			if r != nil {
				_ = r.Close()
			}
		}
	})
	return in
}

// TestStateRoundTrip: a second server built on the first one's frozen
// state and descriptors serves its allocations as they were — same
// relayed addresses, channels, permissions and nonces; a datagram sent
// during the switch is relayed once; the next Refresh and the final
// Refresh(0) are the successor's, whose usage record counts what the
// first server relayed — and the first writes none and closes nothing of
// the successor's when it stops.
func TestStateRoundTrip(t *testing.T) {
	optsA := testOptions()
	usageA := usageLog(&optsA)
	a := start(t, optsA)
	peer := echoPeer(t)

	u := dial(t, a, "udp")
	relayedU := u.MustAllocate()
	if code := u.Permit(peer); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	if m := u.ChannelBind(0x4000, peer); testturn.ErrorCode(m) != 0 {
		t.Fatalf("channel bind: %d", testturn.ErrorCode(m))
	}
	if !u.EchoChannel(0x4000, "before") {
		t.Fatal("no echo before the switch")
	}
	tc := dial(t, a, "tcp")
	relayedT := tc.MustAllocate()
	if code := tc.Permit(peer); code != 0 {
		t.Fatalf("tcp permission: %d", code)
	}
	if !tc.Echo(peer, "tcp before") {
		t.Fatal("no tcp echo before the switch")
	}

	served := a.UDPAddrs()[0].String()
	f := freeze(t, a)
	// Sent while neither server reads: the kernel queues it.
	u.SendChannel(0x4000, []byte("during"))

	optsB := testOptions()
	usageB := usageLog(&optsB)
	b := successor(t, f, optsB)
	if moved, stayed := f.Commit(); moved != 2 || stayed != 0 {
		t.Fatalf("commit moved %d, left %d; want 2 and 0", moved, stayed)
	}
	b.Start()

	if got := readChannel(t, u, 0x4000); got != "during" {
		t.Fatalf("after the switch the client read %q first, want the echo of the datagram sent during it", got)
	}
	if n := a.Table().Count(); n != 0 {
		t.Fatalf("the first server still holds %d allocations", n)
	}
	if n := b.Table().Count(); n != 2 {
		t.Fatalf("the successor holds %d allocations, want 2", n)
	}
	if b.UDPAddrs()[0].String() != served || len(a.UDPAddrs()) != 0 {
		t.Fatalf("successor serves %v, the first served %v and still serves %v", b.UDPAddrs(), served, a.UDPAddrs())
	}
	// Stopping the first server closes its copies only.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case rec := <-usageA:
		t.Fatalf("the first server wrote a usage record for a moved allocation: %v", rec)
	default:
	}
	if !u.EchoChannel(0x4000, "after") || !tc.Echo(peer, "tcp after") {
		t.Fatal("no echo through the successor")
	}
	// The client's nonce, issued by the first server, is still good: no 438.
	if code := testturn.ErrorCode(u.RoundTrip(u.Build(stun.MethodRefresh, testturn.Lifetime(time.Minute)))); code != 0 {
		t.Fatalf("refresh through the successor with the first server's nonce: %d", code)
	}
	if code := u.Permit(peer); code != 0 {
		t.Fatalf("permission through the successor: %d", code)
	}
	infos := b.Sessions("")
	relayed := map[string]bool{}
	for _, in := range infos {
		relayed[in.Relay.String()] = true
	}
	if !relayed[relayedU.String()] || !relayed[relayedT.String()] {
		t.Fatalf("successor's sessions %v, want relayed %v and %v", infos, relayedU, relayedT)
	}
	if code := u.Refresh(0); code != 0 {
		t.Fatalf("refresh(0): %d", code)
	}
	rec := nextRecord(t, usageB)
	if rec["reason"] != allocation.EndReleased.String() || rec["to_peer_packets"].(uint64) < 3 {
		t.Fatalf("successor's usage record %v: want released, counting the packets relayed before the switch", rec)
	}
}

// readChannel reads frames until ChannelData on number arrives.
func readChannel(t *testing.T, c *testturn.Client, number uint16) string {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		f, err := c.ReadFrame(time.Until(deadline))
		if err != nil {
			break
		}
		if len(f) >= 4 && binary.BigEndian.Uint16(f) == number {
			return string(f[4:])
		}
	}
	t.Fatal("no ChannelData")
	return ""
}

// TestThawLosesNothing: a hand-over that does not happen leaves the server
// as it was; what arrived while it was frozen is served after.
func TestThawLosesNothing(t *testing.T) {
	a := start(t, testOptions())
	peer := echoPeer(t)
	u := dial(t, a, "udp")
	u.MustAllocate()
	u.Permit(peer)
	u.ChannelBind(0x4000, peer)
	f := freeze(t, a)
	u.SendChannel(0x4000, []byte("frozen"))
	f.Thaw()
	if got := readChannel(t, u, 0x4000); got != "frozen" {
		t.Fatalf("read %q, want the echo of the datagram sent while frozen", got)
	}
	if code := u.Refresh(time.Minute); code != 0 {
		t.Fatalf("refresh after thaw: %d", code)
	}
	if a.Table().Count() != 1 {
		t.Fatalf("count %d after thaw", a.Table().Count())
	}
}

// TestSuccessorRefusesAnotherVersion: a state it does not know fails the
// successor's New, changes nothing in the first server, and a later
// hand-over succeeds.
func TestSuccessorRefusesAnotherVersion(t *testing.T) {
	a := start(t, testOptions())
	peer := echoPeer(t)
	u := dial(t, a, "udp")
	u.MustAllocate()
	u.Permit(peer)
	f := freeze(t, a)
	bad := append([]byte(nil), f.State...)
	copy(bad, `{"version":9`)
	opts := testOptions()
	opts.Inherit = inherit(t, f)
	opts.Inherit.State = bad
	if _, err := server.New(opts); !errors.Is(err, server.ErrStateVersion) {
		t.Fatalf("successor of another version: %v", err)
	}
	f.Thaw()
	if !u.Echo(peer, "still here") {
		t.Fatal("the first server stopped relaying")
	}
	b := handOver(t, a, testOptions())
	if b.Table().Count() != 1 || !u.Echo(peer, "moved") {
		t.Fatal("a later hand-over did not take the allocation")
	}
}

// TestSuccessorAcceptsNothingBeforeStart: a successor built but not yet
// started takes no connection, even on a sorting (PROXY) port; when the
// hand-over then fails, the first server serves what came meanwhile.
func TestSuccessorAcceptsNothingBeforeStart(t *testing.T) {
	a := start(t, proxiedOptions(t))
	addr := tcpAddr(t, a)
	f := freeze(t, a)
	optsB := proxiedOptions(t)
	optsB.Inherit = inherit(t, f)
	b, err := server.New(optsB)
	if err != nil {
		f.Thaw()
		t.Fatal(err)
	}
	// Not from the trusted proxy: a direct client, which sends no header.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Nothing signals an accept that must not happen: the connection must
	// stay in the listener's queue for a while.
	port := c.RemoteAddr().(*net.TCPAddr).Port
	// The client's connect returns before the listener has the client's
	// ACK: the connection reaches the queue a moment later.
	for end := time.Now().Add(waitTimeout); acceptQueue(t, port) == 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
		if q := acceptQueue(t, port); q != 1 {
			t.Fatalf("listener queue holds %d connections, want the one nobody may accept yet", q)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = b.Close()
	f.Thaw()
	m := stun.MustBuild(stun.TransactionID, stun.BindingRequest)
	if _, err := c.Write(m.Raw); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := c.Read(make([]byte, 1500)); err != nil {
		t.Fatalf("the connection made during a failed hand-over was lost: %v", err)
	}
}

// acceptQueue is how many connections wait in the accept queue of the
// loopback TCP listener on port (/proc/net/tcp's rx_queue of a LISTEN
// socket).
func acceptQueue(t *testing.T, port int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasSuffix(f[1], want) && f[3] == "0A" { // 0A: LISTEN
			var tx, rx int
			if _, err := fmt.Sscanf(f[4], "%X:%X", &tx, &rx); err != nil {
				t.Fatal(err)
			}
			return rx
		}
	}
	t.Fatalf("no listener on port %d", port)
	return 0
}
