package server_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/server"
)

// tcpPipe is an RFC 6062 allocation with one bound peer connection: what
// the client writes on data reaches peer, and back.
type tcpPipe struct {
	control, data *testturn.Client
	peer          net.Conn
}

// openTCPPipe allocates a TCP relay as user, connects it to a fresh peer
// and binds the connection on a second client connection.
func openTCPPipe(t *testing.T, s *server.Server, user string) tcpPipe {
	t.Helper()
	addr, accepted := acceptingPeer(t)
	c := dialAs(t, s, "tcp", user, user)
	if user == "demo" {
		c = dial(t, s, "tcp")
	}
	wantCode(t, c, c.AllocateTCP(), 0, "tcp allocation")
	resp := c.Connect(addr)
	wantCode(t, c, resp, 0, "Connect")
	id, err := resp.Get(stun.AttrConnectionID)
	if err != nil {
		t.Fatalf("no CONNECTION-ID: %v", err)
	}
	var peer net.Conn
	select {
	case peer = <-accepted:
	case <-time.After(waitTimeout):
		t.Fatal("peer saw no connection")
	}
	data := dialAs(t, s, "tcp", user, user)
	if user == "demo" {
		data = dial(t, s, "tcp")
	}
	wantCode(t, data, data.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id)), 0, "ConnectionBind")
	return tcpPipe{control: c, data: data, peer: peer}
}

// pass writes n bytes into w and reads them whole from r.
func pass(t *testing.T, w, r net.Conn, n int) {
	t.Helper()
	if _, err := w.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	_ = r.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.ReadFull(r, make([]byte, n)); err != nil {
		t.Fatalf("reading %d relayed bytes: %v", n, err)
	}
}

// awaitToPeer returns demo's live usage once n bytes to the peer are
// counted, or after waitTimeout.
func awaitToPeer(t *testing.T, s *server.Server, n uint64) traffic.Usage {
	t.Helper()
	return awaitUserToPeer(t, s, "demo", n)
}

// awaitUserToPeer is awaitToPeer for user's one allocation.
func awaitUserToPeer(t *testing.T, s *server.Server, user string, n uint64) traffic.Usage {
	t.Helper()
	sessions := s.Sessions(user)
	if len(sessions) != 1 {
		t.Fatalf("sessions of %s: %+v", user, sessions)
	}
	return awaitUsage(t, s, sessions[0], func(u traffic.Usage) bool { return u.ToPeerBytes >= n })
}

// awaitUsage returns the live usage of sess once ok holds of it, or after
// waitTimeout. The relay counts a datagram or a stream's write as the send
// returns, which the receiver's read may beat, and no event says when: so
// the test looks again, bounded.
func awaitUsage(t *testing.T, s *server.Server, sess allocation.Info, ok func(traffic.Usage) bool) traffic.Usage {
	t.Helper()
	u := s.Usage(sess)
	for deadline := time.Now().Add(waitTimeout); !ok(u) && time.Now().Before(deadline); u = s.Usage(sess) {
		time.Sleep(time.Millisecond)
	}
	return u
}

// TestRFC6062RelayUsageAndDisconnect: an RFC 6062 relay's bytes each way
// show in /sessions while it lives and in its usage record; Disconnect ends
// it at once (its data connection closes, its next Refresh gets 437).
func TestRFC6062RelayUsageAndDisconnect(t *testing.T) {
	opts := testOptions()
	records := usageLog(&opts)
	s := start(t, opts)
	p := openTCPPipe(t, s, "demo")
	pass(t, p.data.Conn(), p.peer, 3000)
	pass(t, p.peer, p.data.Conn(), 5000)

	if u := awaitToPeer(t, s, 3000); u.ToPeerBytes != 3000 || u.FromPeerBytes != 5000 || u.ToPeerPackets == 0 || u.FromPeerPackets == 0 {
		t.Fatalf("live usage %+v, want 3000 bytes to the peer and 5000 from it", u)
	}
	if n := s.Disconnect("demo", "", "test"); n != 1 {
		t.Fatalf("Disconnect ended %d allocations, want 1", n)
	}
	wantFields(t, nextRecord(t, records), map[string]any{
		"reason": server.EndDisconnected, "user": "demo",
		"to_peer_bytes": uint64(3000), "from_peer_bytes": uint64(5000),
	})
	if !p.data.WaitClosed(3 * time.Second) {
		t.Fatal("data connection still open 3 s after the disconnect")
	}
	if code := p.control.Refresh(0); code != 437 {
		t.Fatalf("Refresh after the disconnect: %d, want 437", code)
	}
}

// TestRFC6062RelayUsageOnRelease: a released RFC 6062 allocation's usage
// record has its bytes (read after pion closed the listener).
func TestRFC6062RelayUsageOnRelease(t *testing.T) {
	opts := testOptions()
	records := usageLog(&opts)
	s := start(t, opts)
	p := openTCPPipe(t, s, "demo")
	pass(t, p.data.Conn(), p.peer, 1200)
	pass(t, p.peer, p.data.Conn(), 700)
	awaitToPeer(t, s, 1200)
	if code := p.control.Refresh(0); code != 0 {
		t.Fatalf("refresh 0: %d", code)
	}
	wantFields(t, nextRecord(t, records), map[string]any{
		"reason": server.EndReleased, "to_peer_bytes": uint64(1200), "from_peer_bytes": uint64(700),
	})
}

// TestRFC6062RelayMaxBPS: limits.max_bps paces an RFC 6062 relay each way
// to its rate, at most 10 % over it in two seconds (and not far under, on a
// loaded machine too); bob, unlimited through
// user_max_bps, is not slowed on the same server.
func TestRFC6062RelayMaxBPS(t *testing.T) {
	const (
		rate   = 400_000 // bit/s: 50 kB/s
		window = 2 * time.Second
	)
	opts := testOptions()
	opts.Config.Auth.Users["bob"] = "bob"
	opts.Config.Limits.MaxBPS = rate
	opts.Config.Limits.UserMaxBPS = map[string]int64{"bob": 0}
	s := start(t, opts)
	limited, free := openTCPPipe(t, s, "demo"), openTCPPipe(t, s, "bob")

	// Each writer offers 1 MB, ten times what the rate lets through in the
	// window; the readers count what arrives in it.
	results := make(chan int, 4)
	for _, c := range []struct{ w, r net.Conn }{
		{limited.data.Conn(), limited.peer}, {limited.peer, limited.data.Conn()},
		{free.data.Conn(), free.peer}, {free.peer, free.data.Conn()},
	} {
		go offerMB(c.w)
		go countFor(c.r, window, results)
	}
	// The burst allowance (100 ms at the rate) comes on top of the rate.
	want := float64(rate) / 8 * (window + 100*time.Millisecond).Seconds()
	got := make([]int, 0, 4)
	for range 4 {
		got = append(got, <-results)
	}
	u := s.Usage(s.Sessions("demo")[0])
	ub := s.Usage(s.Sessions("bob")[0])
	t.Logf("in %v: demo %d bytes to the peer, %d from it (usage so far); bob %d and %d", window, u.ToPeerBytes, u.FromPeerBytes, ub.ToPeerBytes, ub.FromPeerBytes)
	limitedGot, freeGot := 0, 0
	for _, n := range got {
		if f := float64(n); f >= 0.6*want && f <= 1.1*want {
			limitedGot++
		} else if float64(n) > 3*want {
			freeGot++
		}
	}
	for _, dir := range []struct {
		what string
		n    uint64
	}{{"to the peer", u.ToPeerBytes}, {"from the peer", u.FromPeerBytes}} {
		if f := float64(dir.n); f < 0.6*want || f > 1.1*want+float64(rate)/8 { // a second more of writing may be counted
			t.Errorf("limited %s: %d bytes relayed, want about %.0f", dir.what, dir.n, want)
		}
	}
	if limitedGot != 2 || freeGot != 2 {
		t.Errorf("bytes read in %v per direction: %v; want two within 10 %% of %.0f (limited) and two past 3× (unlimited)", window, got, want)
	}
}

// TestRFC6062UsageCountsPermissions: an RFC 6062 allocation's usage
// record counts the permissions it installed, as a UDP relay's does: two
// peers, one of them refreshed, make two.
func TestRFC6062UsageCountsPermissions(t *testing.T) {
	opts := testOptions()
	records := usageLog(&opts)
	s := start(t, opts)
	c := dial(t, s, "tcp")
	wantCode(t, c, c.AllocateTCP(), 0, "tcp allocation")
	for _, peer := range []*net.UDPAddr{{IP: net.IPv4(127, 0, 0, 1), Port: 9}, {IP: net.IPv4(127, 0, 0, 2), Port: 9}, {IP: net.IPv4(127, 0, 0, 1), Port: 9}} {
		mustPermit(t, c, peer)
	}
	if u := s.Usage(s.Sessions("demo")[0]); u.Permissions != 2 {
		t.Fatalf("live usage counts %d permissions, want 2", u.Permissions)
	}
	if code := c.Refresh(0); code != 0 {
		t.Fatalf("refresh 0: %d", code)
	}
	wantFields(t, nextRecord(t, records), map[string]any{"reason": server.EndReleased, "permissions": uint64(2)})
}

// offerMB writes 1 MB to w, or until w is closed (the test's end).
func offerMB(w net.Conn) {
	buf := make([]byte, 16*1024)
	for range 64 {
		if _, err := w.Write(buf); err != nil {
			return
		}
	}
}

// countFor sends on got how many bytes r delivered within window.
func countFor(r net.Conn, window time.Duration, got chan<- int) {
	buf := make([]byte, 64*1024)
	total := 0
	_ = r.SetReadDeadline(time.Now().Add(window))
	for {
		n, err := r.Read(buf)
		total += n
		if err != nil {
			got <- total
			return
		}
	}
}
