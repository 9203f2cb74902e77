package edge

import (
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"
)

// TestClaimsFollowTheConnections: a 5-tuple is held exactly while a
// connection holding it is open. A direct client, a proxied client and a
// proxy's LOCAL connection each claim one; a second header for a held
// 5-tuple is refused and claims nothing; once the connections close the
// claim table and the per-IP counts are empty again.
func TestClaimsFollowTheConnections(t *testing.T) {
	refused := make(chan string, 4)
	s, err := Bind(Listen{
		TCP:     []string{"127.0.0.1:0"},
		Proxy:   &Proxy{Listeners: []string{"127.0.0.1:0"}, Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Refused: func(reason string) { refused <- reason },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	addr := s.TCP[0].Addr().String()
	client := &net.TCPAddr{IP: net.IPv4(198, 51, 100, 1), Port: 40000}

	dial := func(from string, header *proxyproto.Header) {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if header == nil {
			_, err = c.Write([]byte{0, 1}) // a direct client's first bytes (a Binding's type)
		} else {
			_, err = header.WriteTo(c)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	server := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	dial("127.0.0.7", nil)
	dial("127.0.0.1", proxyproto.HeaderProxyFromAddrs(2, client, server))
	dial("127.0.0.1", &proxyproto.Header{Version: 2, Command: proxyproto.LOCAL})

	var accepted []net.Conn
	for range 3 {
		c, err := s.TCP[0].Accept()
		if err != nil {
			t.Fatal(err)
		}
		accepted = append(accepted, c)
	}
	dial("127.0.0.1", proxyproto.HeaderProxyFromAddrs(2, client, server))
	select {
	case r := <-refused:
		if r != RefuseFiveTuple {
			t.Fatalf("second header for a held 5-tuple refused as %q, want %q", r, RefuseFiveTuple)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second header for a held 5-tuple not refused")
	}

	held := func() (tuples int, counted []int) {
		s.streams.mu.Lock()
		defer s.streams.mu.Unlock()
		for _, ip := range []string{"127.0.0.7", "198.51.100.1", "127.0.0.1"} {
			counted = append(counted, s.streams.clients.Host(netip.MustParseAddr(ip)))
		}
		return len(s.streams.held), counted
	}
	if tuples, counted := held(); tuples != 3 || !slices.Equal(counted, []int{1, 1, 0}) {
		t.Errorf("with three connections open: %d 5-tuples held, per-IP counts %v; want 3 and [1 1 0] (a LOCAL connection counts no client)", tuples, counted)
	}
	for _, c := range accepted {
		_ = c.Close()
	}
	if tuples, counted := held(); tuples != 0 || !slices.Equal(counted, []int{0, 0, 0}) {
		t.Errorf("with every connection closed: %d 5-tuples held, per-IP counts %v; want none", tuples, counted)
	}
}
