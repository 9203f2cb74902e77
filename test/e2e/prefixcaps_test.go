package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// Addresses inside TestPrefixCaps' namespace: turnd's, many /64s of one
// IPv6 /48 (two of its /56s), a host of another /48; IPv4 hosts of one /24
// and of another come from 127.0.0.0/8.
const (
	prefixServer = "fd7e:ffff::1"
	otherSite    = "fd7e:2::1"
)

// siteHosts are one address in each of n /64s of the /48 fd7e:1::/48: the
// first /56 holds 8 of them, the next ones come from a second /56.
func siteHosts(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("fd7e:1:0:%x::1", i%8+i/8*0x100))
	}
	return out
}

// v4Hosts are n addresses of the IPv4 /24 127.0.1.0/24.
func v4Hosts(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("127.0.1.%d", i+1))
	}
	return out
}

// TestPrefixCaps: one network cannot take every TCP connection slot nor
// every allocation by spreading over its addresses. Scaled down (4
// connections per /64, 16 per /48 or /24, 64 in all; 2 allocations per
// /64, 6 per /48 or /24): 9 /64s of one /48 (8 of them in one /56) open 36
// connections and get 16, the rest closed on accept as per_prefix; 8 IPv4
// hosts of one /24 get 16 of 32; a host of another /48 and one of another
// /24 are still served and allocate. The same /48 gets 6 of 10 allocations
// (486 for the rest), another /48 still allocates. turnd runs in a network
// namespace the test makes, where the addresses exist.
func TestPrefixCaps(t *testing.T) {
	requireNetns(t)
	ns := addNetns(t, "turnd-prefix")
	for _, a := range append(siteHosts(9), prefixServer, otherSite) {
		ns.ip(t, "addr", "add", a+"/128", "dev", "lo")
	}
	cfg := testConfig()
	// TCP on the dual-stack wildcard: IPv4 clients arrive as ::ffff:a.b.c.d
	// and must still count in their /24. UDP answers from the address a
	// client reached only on a bound socket: one per family.
	cfg.Listen.TCP = []string{"[::]:0"}
	cfg.Listen.UDP = []string{"[" + prefixServer + "]:0", "127.0.0.1:0"}
	cfg.Relay.Address = "127.0.0.1," + prefixServer
	cfg.Limits.ConnectionsPerIP, cfg.Limits.ConnectionsPerPrefix, cfg.Limits.Connections = 4, 16, 64
	cfg.Limits.IPAllocations, cfg.Limits.PrefixAllocations = 2, 6
	srv := startIn(t, ns, cfg)
	port := func(addr string) string {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tcp6, tcp4 := net.JoinHostPort(prefixServer, port(srv.TCP)), net.JoinHostPort("127.0.0.1", port(srv.TCP))
	udp, _ := srv.waitLog("turnd serving", time.Second)["udp"].([]any)
	if len(udp) != 2 {
		t.Fatalf("UDP addresses %v, want two", udp)
	}
	udp6, udp4 := udp[0].(string), udp[1].(string)

	if got := ns.servedTCP(t, tcp6, siteHosts(9), 4); got != 16 {
		t.Errorf("9 /64s of one /48, 4 connections each: %d served, want 16 (limits.connections_per_prefix)", got)
	}
	if got := ns.servedTCP(t, tcp4, v4Hosts(8), 4); got != 16 {
		t.Errorf("8 hosts of one IPv4 /24, 4 connections each: %d served, want 16 (limits.connections_per_prefix)", got)
	}
	for _, c := range []struct{ from, addr string }{{otherSite, tcp6}, {"127.0.2.1", tcp4}} {
		other := ns.dialFrom(t, "tcp", c.from, c.addr)
		if got := other.BindingMapped(); got == nil || !got.IP.Equal(net.ParseIP(c.from)) {
			t.Fatalf("%s, from another prefix: Binding answered %v, want it served", c.from, got)
		}
		other.MustAllocate()
	}

	for _, c := range []struct {
		addr  string
		hosts []string
	}{{udp6, siteHosts(5)}, {udp4, v4Hosts(4)}} {
		allocated, refused := 0, 0
		for _, h := range c.hosts {
			for range 2 {
				switch code := testturn.ErrorCode(ns.dialFrom(t, "udp", h, c.addr).Allocate()); code {
				case 0:
					allocated++
				case 486:
					refused++
				default:
					t.Fatalf("Allocate from %s: error %d", h, code)
				}
			}
		}
		if allocated != 6 || refused != 2*len(c.hosts)-6 {
			t.Errorf("%d hosts of one prefix, 2 allocations each: %d allocated, %d refused, want 6 and %d (limits.prefix_allocations)",
				len(c.hosts), allocated, refused, 2*len(c.hosts)-6)
		}
	}
	for _, c := range []struct{ from, addr string }{{otherSite, udp6}, {"127.0.2.2", udp4}} {
		if code := testturn.ErrorCode(ns.dialFrom(t, "udp", c.from, c.addr).Allocate()); code != 0 {
			t.Errorf("Allocate from %s, another prefix: error %d, want success", c.from, code)
		}
	}

	metrics := ns.get(t, "http://"+srv.HTTP+"/metrics")
	for sample, want := range map[string]float64{
		`turnd_connections_refused_total{reason="per_prefix"}`: 20 + 16,
		`turnd_connections_refused_total{reason="per_ip"}`:     0,
		`turnd_connections_refused_total{reason="total"}`:      0,
		`turnd_allocations_rejected_total{reason="quota"}`:     4 + 2,
	} {
		if got := sampleValue(t, metrics, sample); got != want {
			t.Errorf("%s = %v, want %v", sample, got, want)
		}
	}
}

// dialFrom is testturn.DialFrom with the socket made inside the namespace.
func (ns netns) dialFrom(t *testing.T, network, from, addr string) *testturn.Client {
	t.Helper()
	var c net.Conn
	err := ns.do(func() (err error) {
		var local net.Addr = &net.UDPAddr{IP: net.ParseIP(from)}
		if network == "tcp" {
			local = &net.TCPAddr{IP: net.ParseIP(from)}
		}
		c, err = (&net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}).Dial(network, addr)
		return err
	})
	if err != nil {
		t.Fatalf("dial %s %s from %s: %v", network, addr, from, err)
	}
	return testturn.Over(t, c, "demo", "demo")
}

// servedTCP opens n TCP connections to addr from each of froms, one after
// another, and returns how many turnd served (a Binding answered) rather
// than closed on accept. Served ones stay open until the test ends,
// holding their slots.
func (ns netns) servedTCP(t *testing.T, addr string, froms []string, n int) int {
	t.Helper()
	served := 0
	for _, from := range froms {
		for range n {
			c := ns.dialFrom(t, "tcp", from, addr)
			if bindingAnswered(c.Conn()) {
				served++
			}
		}
	}
	return served
}

// bindingAnswered sends a STUN Binding on c and reports whether an answer
// came back before turnd closed the connection.
func bindingAnswered(c net.Conn) bool {
	req := stun.MustBuild(stun.TransactionID, stun.BindingRequest)
	if _, err := c.Write(req.Raw); err != nil {
		return false
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 512))
	return err == nil && n >= 20
}

// sampleValue returns the value of one sample line of a /metrics body.
func sampleValue(t *testing.T, body, sample string) float64 {
	t.Helper()
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, sample+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	t.Fatalf("metric %s not found", sample)
	return 0
}
