package server_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pires/go-proxyproto"

	"github.com/turnd/turnd/internal/testproxy"
	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
)

// proxiedOptions is a server whose TCP and TLS listeners sit behind a PROXY
// protocol proxy on 127.0.0.1; clients use other loopback addresses.
func proxiedOptions(t *testing.T) server.Options {
	certFile, keyFile := writeCert(t, t.TempDir(), 1)
	opts := testOptions()
	opts.Config.Listen.TLS = []string{"127.0.0.1:0"}
	opts.Config.TLS.CertFile, opts.Config.TLS.KeyFile = certFile, keyFile
	opts.Config.Listen.ProxyProtocol.Listeners = []string{"127.0.0.1:0"}
	opts.Config.Listen.ProxyProtocol.Trusted = []string{"127.0.0.1"}
	opts.Config.Limits.IPAllocations = 1
	return opts
}

// TestProxyProtocolClientAddress: through a PROXY v1 or v2 proxy, turnd
// sees each client's own address: in XOR-MAPPED-ADDRESS, in the
// allocation's 5-tuple, and in the per-IP limit (one allocation per IP
// here: two clients behind one proxy both get theirs, a second from the
// same client IP does not).
func TestProxyProtocolClientAddress(t *testing.T) {
	for _, version := range []byte{1, 2} {
		t.Run("v"+string('0'+version), func(t *testing.T) {
			s := start(t, proxiedOptions(t))
			proxy := testproxy.PROXY(t, tcpAddr(t, s), version)

			a := testturn.DialFrom(t, "tcp", "127.0.0.7", proxy, "demo", "demo")
			if got, want := a.BindingMapped().String(), localOf(t, a); got != want {
				t.Fatalf("XOR-MAPPED-ADDRESS through the proxy %s, want the client's %s", got, want)
			}
			a.MustAllocate()
			b := testturn.DialFrom(t, "tcp", "127.0.0.8", proxy, "demo", "demo")
			b.MustAllocate()
			waitCount(t, s.Table(), 2)
			if n := ipCount(s.Table(), netip.MustParseAddr("127.0.0.7")); n != 1 {
				t.Errorf("allocations of 127.0.0.7: %d, want 1", n)
			}
			again := testturn.DialFrom(t, "tcp", "127.0.0.7", proxy, "demo", "demo")
			if code := testturn.ErrorCode(again.Allocate()); code != 486 {
				t.Errorf("second allocation of 127.0.0.7 through the proxy: %d, want 486 (limits.ip_allocations)", code)
			}
		})
	}
}

// TestProxyProtocolRateLimit: limits.unauthenticated_rate counts each
// client behind the proxy by its own address: one client past its rate does
// not silence another that comes through the same proxy.
func TestProxyProtocolRateLimit(t *testing.T) {
	obs := &fakeObserver{}
	opts := proxiedOptions(t)
	opts.Observer = obs
	opts.Config.Limits.UnauthenticatedRate = 1 // a burst of 2
	s := start(t, opts)
	proxy := testproxy.PROXY(t, tcpAddr(t, s), 2)

	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.7")}}
	busy, err := d.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	const sent = 10
	for range sent {
		if _, err := busy.Write(stunBinding(t)); err != nil {
			t.Fatal(err)
		}
	}
	obs.waitDropped(t, sent-3) // at most the burst and one refill answered

	other := testturn.DialFrom(t, "tcp", "127.0.0.8", proxy, "demo", "demo")
	if got := other.BindingMapped(); got == nil || !got.IP.Equal(net.ParseIP("127.0.0.8")) {
		t.Errorf("second client behind the proxy: Binding answered with %v, want 127.0.0.8", got)
	}
}

// TestProxyProtocolConnectionCaps: limits.connections_per_ip counts each
// client behind the proxy by its own address, not the proxy's: two clients
// through one proxy are both served at one connection per IP, a second
// connection of the same client is refused and counted.
func TestProxyProtocolConnectionCaps(t *testing.T) {
	obs := &fakeObserver{}
	opts := proxiedOptions(t)
	opts.Observer = obs
	opts.Config.Limits.ConnectionsPerIP = 1
	s := start(t, opts)
	proxy := testproxy.PROXY(t, tcpAddr(t, s), 2)

	for _, from := range []string{"127.0.0.7", "127.0.0.8"} {
		c := testturn.DialFrom(t, "tcp", from, proxy, "demo", "demo")
		if got := c.BindingMapped(); got == nil || !got.IP.Equal(net.ParseIP(from)) {
			t.Fatalf("client %s behind the proxy: Binding answered with %v", from, got)
		}
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.7")}}
	again, err := d.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Close() })
	if _, err := again.Write(stunBinding(t)); err != nil {
		t.Fatal(err)
	}
	_ = again.SetReadDeadline(time.Now().Add(waitTimeout))
	if n, err := again.Read(make([]byte, 1)); err == nil {
		t.Errorf("second connection of 127.0.0.7: answered (%d bytes), want closed at connections_per_ip 1", n)
	}
	if got := obs.RefusedConns(); !slices.Equal(got, []string{server.RefuseConnectionsPerIP}) {
		t.Errorf("connections refused %q, want one per_ip", got)
	}
}

// localOf returns the client's own address, as turnd should see it.
func localOf(t *testing.T, c *testturn.Client) string {
	t.Helper()
	return c.LocalAddr().String()
}

// TestProxyProtocolTLS: a TLS client behind the proxy is seen by its own
// address too (the header comes before the TLS handshake).
func TestProxyProtocolTLS(t *testing.T) {
	s := start(t, proxiedOptions(t))
	proxy := testproxy.PROXY(t, s.TLSAddrs()[0].String(), 2)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.7")}, Timeout: waitTimeout}
	conn, err := tls.DialWithDialer(d, "tcp", proxy, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // self-signed test certificate
	if err != nil {
		t.Fatalf("tls through the proxy: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	if code := allocateStream(t, conn, "demo", "demo"); code != 0 {
		t.Fatalf("allocate over tls through the proxy: error %d", code)
	}
	waitCount(t, s.Table(), 1)
	if n := ipCount(s.Table(), netip.MustParseAddr("127.0.0.7")); n != 1 {
		t.Errorf("allocations of 127.0.0.7: %d, want 1 (the client's address, not the proxy's)", n)
	}
	wantByTransport(t, s.Table(), 0, 0, 1)
}

// TestProxyProtocolRefusals: a header from a source that is not trusted, a
// trusted proxy's connection without a header, and a malformed header each
// close the connection with a counted reason; a direct client that is not
// a proxy and sends no header is served as itself.
func TestProxyProtocolRefusals(t *testing.T) {
	obs := &fakeObserver{}
	opts := proxiedOptions(t)
	opts.Observer = obs
	s := start(t, opts)
	addr := tcpAddr(t, s)

	header, err := proxyproto.HeaderProxyFromAddrs(2,
		&net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1}, &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 2}).Format()
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		from string
		send []byte
		want string
	}{
		{"127.0.0.7", header, server.ProxyUntrusted},
		{"127.0.0.1", stunBinding(t), server.ProxyMissing},
		{"127.0.0.1", []byte("PROXY TCP4 not-an-ip 127.0.0.1 1 2\r\n"), server.ProxyMalformed},
	} {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tc.from)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Write(tc.send); err != nil {
			t.Fatal(err)
		}
		if got := obs.waitProxyRefused(t, i+1); got[i] != tc.want {
			t.Errorf("from %s: refused as %q, want %q", tc.from, got[i], tc.want)
		}
		_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
		if n, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("from %s: connection still open (read %d bytes)", tc.from, n)
		}
	}

	direct := testturn.DialFrom(t, "tcp", "127.0.0.9", addr, "demo", "demo")
	if got, want := direct.BindingMapped().String(), localOf(t, direct); got != want {
		t.Errorf("direct client: XOR-MAPPED-ADDRESS %s, want %s", got, want)
	}
}

// stunBinding is a Binding request, what a client without a proxy sends first.
func stunBinding(t *testing.T) []byte {
	t.Helper()
	m, err := stun.Build(stun.TransactionID, stun.BindingRequest, stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

// TestProxyRefusalLinesAreBounded: connections from a source that is not
// trusted, each sending a PROXY header, make at most LogLinesPerSecond
// lines in a second while the metric counts every refusal; the next
// second's line says how many were held back, and a refusal of another
// kind (a malformed header from the trusted proxy) is logged meanwhile.
func TestProxyRefusalLinesAreBounded(t *testing.T) {
	const conns, workers = 2000, 4
	obs := &fakeObserver{}
	var log lineLog
	opts := proxiedOptions(t)
	opts.Observer, opts.Logger = obs, log.logger()
	s := start(t, opts)
	advance := frozenClock(s)
	addr := tcpAddr(t, s)
	header := []byte("PROXY TCP4 192.0.2.1 127.0.0.1 1 2\r\n")

	// send connects from, writes b and waits until turnd closes the connection.
	send := func(from string, b []byte) error {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: waitTimeout}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write(b); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			return fmt.Errorf("from %s: connection still open", from)
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range conns / workers {
				if err := send("127.0.0.7", header); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := obs.waitProxyRefused(t, conns); len(got) != conns {
		t.Fatalf("%d refusals counted, want %d", len(got), conns)
	}
	const line = "connection refused: proxy protocol"
	wantBounded(t, log.matching(line), line, conns)

	if err := send("127.0.0.1", []byte("PROXY TCP4 not-an-ip 127.0.0.1 1 2\r\n")); err != nil {
		t.Fatal(err)
	}
	obs.waitProxyRefused(t, conns+1)
	lines := log.matching(line)
	if last := lines[len(lines)-1]; last.attrs["reason"] != server.ProxyMalformed {
		t.Fatalf("a malformed header during a flood of untrusted ones was not logged: last line %v", last)
	}

	advance(time.Second)
	if err := send("127.0.0.7", header); err != nil {
		t.Fatal(err)
	}
	obs.waitProxyRefused(t, conns+2)
	wantSuppressed(t, log.matching(line), line, conns-server.LogLinesPerSecond)
}
