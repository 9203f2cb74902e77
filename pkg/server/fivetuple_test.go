package server_test

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pires/go-proxyproto"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
)

// announced is the client address the proxied connections below all claim.
var announced = &net.TCPAddr{IP: net.ParseIP("198.51.100.1"), Port: 40000}

// announce connects to addr from the trusted proxy address 127.0.0.1 and
// sends a PROXY v2 header naming client, as a proxy does first on every
// connection it forwards. The test holds turnd's side of the connection
// itself, so it sees when turnd closes it.
func announce(t *testing.T, addr string, client *net.TCPAddr) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, Timeout: waitTimeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := proxyproto.HeaderProxyFromAddrs(2, client, c.RemoteAddr()).WriteTo(c); err != nil {
		t.Fatalf("write proxy header: %v", err)
	}
	return c
}

// closedUnanswered reports whether turnd closes c rather than answer a
// STUN Binding on it.
func closedUnanswered(t *testing.T, c net.Conn) bool {
	t.Helper()
	if _, err := c.Write(stunBinding(t)); err != nil {
		return true // reset: closed already
	}
	_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
	_, err := c.Read(make([]byte, 512))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// wantRefusedFiveTuple checks that n connections were refused, each
// because a live one held its 5-tuple.
func wantRefusedFiveTuple(t *testing.T, obs *fakeObserver, n int) {
	t.Helper()
	if got := obs.RefusedConns(); !slices.Equal(got, slices.Repeat([]string{server.RefuseFiveTuple}, n)) {
		t.Errorf("connections refused %q, want %d %s", got, n, server.RefuseFiveTuple)
	}
}

// hangUp half-closes c and waits until turnd has closed its side, which it
// does once it has let go of everything the connection held.
func hangUp(t *testing.T, c *testturn.Client) {
	t.Helper()
	if err := c.Conn().(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if !c.WaitClosed(waitTimeout) {
		t.Fatal("turnd kept the connection open after the client hung up")
	}
}

// TestProxiedFiveTupleHeld: two connections from a trusted proxy announce
// one client address and port (two proxy frontends, or a NAT reusing a
// source port per destination). The second, never authenticated, is closed
// at once and counted; it gets nothing of the first's and its hang-up does
// not end the first's allocation. Once the first connection is gone, the
// 5-tuple can be claimed again.
func TestProxiedFiveTupleHeld(t *testing.T) {
	obs := &fakeObserver{}
	opts := proxiedOptions(t)
	opts.Observer = obs
	s := start(t, opts)
	addr := tcpAddr(t, s)

	first := testturn.Over(t, announce(t, addr, announced), "demo", "demo")
	first.MustAllocate()
	peer := echoPeer(t)
	mustPermit(t, first, peer)

	second := announce(t, addr, announced)
	if !closedUnanswered(t, second) {
		t.Error("a second connection announcing a live connection's address and port was served")
	}
	second.Close()
	wantRefusedFiveTuple(t, obs, 1)

	mustEcho(t, first, peer, "after the second connection")
	if code := first.Refresh(time.Minute); code != 0 {
		t.Fatalf("first connection's Refresh after the second hung up: %d, want success", code)
	}
	waitCount(t, s.Table(), 1)

	hangUp(t, first)
	waitCount(t, s.Table(), 0)
	again := testturn.Over(t, announce(t, addr, announced), "demo", "demo")
	again.MustAllocate()
	mustPermit(t, again, peer)
	mustEcho(t, again, peer, "the 5-tuple claimed again")
	wantRefusedFiveTuple(t, obs, 1)
}

// TestProxiedFiveTupleOfDirectClient: on a listener behind a proxy, a
// client that connects directly holds its own 5-tuple; a header announcing
// it is refused, and the direct client's allocation lives on.
func TestProxiedFiveTupleOfDirectClient(t *testing.T) {
	obs := &fakeObserver{}
	opts := proxiedOptions(t)
	opts.Observer = obs
	s := start(t, opts)
	addr := tcpAddr(t, s)

	direct := testturn.DialFrom(t, "tcp", "127.0.0.7", addr, "demo", "demo")
	direct.MustAllocate()
	if !closedUnanswered(t, announce(t, addr, direct.LocalAddr().(*net.TCPAddr))) {
		t.Error("a header announcing a direct client's address and port was served")
	}
	wantRefusedFiveTuple(t, obs, 1)
	if code := direct.Refresh(time.Minute); code != 0 {
		t.Fatalf("direct client's Refresh: %d, want success", code)
	}
}

// TestProxiedFiveTupleOfDataConnection: an RFC 6062 data connection holds
// its 5-tuple like a control connection: a header announcing it is
// refused, and the data connection keeps carrying the peer's bytes.
func TestProxiedFiveTupleOfDataConnection(t *testing.T) {
	obs := &fakeObserver{}
	opts := proxiedOptions(t)
	opts.Observer = obs
	s := start(t, opts)
	addr := tcpAddr(t, s)

	peerAddr, accepted := acceptingPeer(t)
	control := testturn.DialFrom(t, "tcp", "127.0.0.7", addr, "demo", "demo")
	wantCode(t, control, control.AllocateTCP(), 0, "tcp allocation")
	id := connectID(t, control, peerAddr)
	var peer net.Conn
	select {
	case peer = <-accepted:
	case <-time.After(waitTimeout):
		t.Fatal("peer saw no connection")
	}
	data := testturn.DialFrom(t, "tcp", "127.0.0.7", addr, "demo", "demo")
	wantCode(t, data, data.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id)), 0, "ConnectionBind")

	if !closedUnanswered(t, announce(t, addr, data.LocalAddr().(*net.TCPAddr))) {
		t.Error("a header announcing a data connection's address and port was served")
	}
	wantRefusedFiveTuple(t, obs, 1)
	pass(t, peer, data.Conn(), 1000)
	pass(t, data.Conn(), peer, 1000)
}

// TestProxiedFiveTupleTLS: the same holds for TLS listeners behind a proxy,
// and on a shared TCP+TLS port, where a plain and a TLS connection have one
// local address and so may claim one 5-tuple.
func TestProxiedFiveTupleTLS(t *testing.T) {
	clientTLS := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // self-signed test certificate
	for _, shared := range []bool{false, true} {
		name := "tls"
		if shared {
			name = "tcp_tls"
		}
		t.Run(name, func(t *testing.T) {
			obs := &fakeObserver{}
			opts := proxiedOptions(t)
			opts.Observer = obs
			if shared {
				opts.Config.Listen.TCP, opts.Config.Listen.TLS = nil, nil
				opts.Config.Listen.TCPTLS = []string{"127.0.0.1:0"}
			}
			s := start(t, opts)
			addr := s.TLSAddrs()[0].String()

			var first *testturn.Client
			if shared {
				first = testturn.Over(t, announce(t, addr, announced), "demo", "demo")
			} else {
				first = testturn.Over(t, tls.Client(announce(t, addr, announced), clientTLS), "demo", "demo")
			}
			first.MustAllocate()

			second := tls.Client(announce(t, addr, announced), clientTLS)
			_ = second.SetDeadline(time.Now().Add(waitTimeout))
			if err := second.Handshake(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("a second TLS connection announcing a live connection's address and port: handshake %v, want closed", err)
			}
			wantRefusedFiveTuple(t, obs, 1)
			if code := first.Refresh(time.Minute); code != 0 {
				t.Fatalf("first connection's Refresh: %d, want success", code)
			}
		})
	}
}
