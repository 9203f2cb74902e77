package server_test

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// fakeResolver answers from a table it can be told to change, and reports
// every lookup on calls.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]netip.Addr
	calls   chan string
}

func (f *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	ips, ok := f.answers[host]
	f.mu.Unlock()
	f.calls <- host
	if !ok || network != "ip" {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return ips, nil
}

func (f *fakeResolver) set(host string, ips ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []netip.Addr
	for _, s := range ips {
		out = append(out, netip.MustParseAddr(s))
	}
	f.answers[host] = out
}

// lookups waits for n more lookups. The refresh loop is serial: once a
// lookup has started, the answer of the one before it is published.
func (f *fakeResolver) lookups(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-f.calls:
		case <-time.After(waitTimeout):
			t.Fatalf("no lookup after %d of %d", i, n)
		}
	}
}

// unauthenticatedAllocate sends the first leg of an Allocate, as a browser
// does, and returns the answer.
func unauthenticatedAllocate(t *testing.T, c *testturn.Client) *stun.Message {
	t.Helper()
	req, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest),
		testturn.RawAttr(stun.AttrRequestedTransport, []byte{17, 0, 0, 0}), stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	return c.RoundTrip(req)
}

// alternateOf returns the ALTERNATE-SERVER of a 300, failing on anything else.
func alternateOf(t *testing.T, m *stun.Message) string {
	t.Helper()
	var ec stun.ErrorCodeAttribute
	if err := ec.GetFrom(m); err != nil || ec.Code != 300 || string(ec.Reason) != "Try Alternate" {
		t.Fatalf("answer %v: ERROR-CODE %v, want 300 Try Alternate", m, ec)
	}
	if m.Contains(stun.AttrNonce) {
		t.Errorf("300 to an unauthenticated Allocate carries a NONCE")
	}
	var alt stun.AlternateServer
	if err := alt.GetFrom(m); err != nil {
		t.Fatalf("300 without ALTERNATE-SERVER: %v", err)
	}
	return net.JoinHostPort(alt.IP.String(), strconv.Itoa(alt.Port))
}

// TestAlternateNames: a name in drain.alternate_servers is resolved when the
// drain starts and again while it lasts; every record counts but the
// server's own address; with nothing left the drain answers 486 as without
// alternates.
func TestAlternateNames(t *testing.T) {
	port := testturn.FreePort(t)
	res := &fakeResolver{answers: map[string][]netip.Addr{}, calls: make(chan string, 64)}
	res.set("peers.turnd.test", "127.0.0.1", "127.0.0.2")
	changed := make(chan struct{}, 1)
	opts := testOptions()
	opts.Config.Listen.UDP = []string{"127.0.0.1:" + strconv.Itoa(port)}
	opts.Config.Drain.AlternateServers = []string{"peers.turnd.test:" + strconv.Itoa(port)}
	opts.DrainChanged = changed
	opts.Resolver = res
	opts.AlternatesRefresh = 20 * time.Millisecond
	s := start(t, opts)
	c := dial(t, s, "udp")

	changed <- struct{}{} // a status change while serving resolves nothing
	if resp := unauthenticatedAllocate(t, c); testturn.ErrorCode(resp) != 401 {
		t.Fatalf("while serving: %v, want pion's 401", resp)
	}
	select {
	case h := <-res.calls:
		t.Fatalf("%s looked up while serving", h)
	default:
	}

	s.Table().StopAdmitting()
	changed <- struct{}{}
	res.lookups(t, 2)
	self, other := "127.0.0.1:"+strconv.Itoa(port), "127.0.0.2:"+strconv.Itoa(port)
	for i := 0; i < 3; i++ {
		if got := alternateOf(t, unauthenticatedAllocate(t, c)); got != other {
			t.Fatalf("redirect %d to %s, want %s (never %s, the server itself)", i, got, other, self)
		}
	}

	res.set("peers.turnd.test", "127.0.0.3")
	res.lookups(t, 2)
	if got, want := alternateOf(t, unauthenticatedAllocate(t, c)), "127.0.0.3:"+strconv.Itoa(port); got != want {
		t.Fatalf("after the peers changed: redirect to %s, want %s", got, want)
	}

	res.set("peers.turnd.test", "127.0.0.1") // the last peer left: only itself
	res.lookups(t, 2)
	if resp := unauthenticatedAllocate(t, c); testturn.ErrorCode(resp) != 401 {
		t.Fatalf("no peer left, first leg: %v, want pion's 401", resp)
	}
	resp := c.Allocate()
	var ec stun.ErrorCodeAttribute
	if err := ec.GetFrom(resp); err != nil || ec.Code != 486 || string(ec.Reason) != "Allocation Quota Reached" {
		t.Fatalf("no peer left: %v, want 486 Allocation Quota Reached", resp)
	}
	if !c.Signed(resp) {
		t.Error("486 with its reason is not signed with the client's key")
	}
}

// TestAlternateNamesSkipSpecialPurpose: a name's records in the peer
// filter's special-purpose ranges (this network, multicast, link-local,
// cloud metadata, documentation, NAT64 of metadata) are never offered,
// private and shared (100.64.0.0/10) ones are, at most 16 of each family per
// name are kept (a random sample of the 42 usable IPv4 ones), and a
// client is sent to one of its own family: the IPv4 client sees 16 of the
// loopback, shared and private IPv4 records, the IPv6 client the one usable
// IPv6 record.
func TestAlternateNamesSkipSpecialPurpose(t *testing.T) {
	res := &fakeResolver{answers: map[string][]netip.Addr{}, calls: make(chan string, 64)}
	special := []string{"0.0.0.0", "224.0.0.1", "239.255.255.250", "169.254.169.254", "255.255.255.255",
		"192.0.2.1", "100.100.100.200", "::", "fe80::1", "ff02::1", "fd00:ec2::254", "64:ff9b::a9fe:a9fe", "2001:db8::1"}
	var private []string
	for i := 1; i <= 40; i++ {
		private = append(private, "10.0.0."+strconv.Itoa(i))
	}
	res.set("peers.turnd.test", append(append(append([]string{}, special...), "127.0.0.2", "fd12::3", "100.64.0.1"), private...)...)
	changed := make(chan struct{}, 1)
	opts := testOptions()
	opts.Config.Listen.UDP = []string{"127.0.0.1:0", "[::1]:0"}
	opts.Config.Drain.AlternateServers = []string{"peers.turnd.test:3478"}
	opts.DrainChanged = changed
	opts.Resolver = res
	s := start(t, opts)
	addrs := s.UDPAddrs()
	if len(addrs) != 2 {
		t.Fatalf("UDP addresses %v, want one IPv4 and one IPv6", addrs)
	}
	s.Table().StopAdmitting()
	changed <- struct{}{}
	res.lookups(t, 1)

	// 17 records are kept (16 IPv4, 1 IPv6): 36 redirects go round them twice.
	const rounds = 36
	seen := func(addr string) map[string]int {
		c := testturn.Dial(t, "udp", addr, "demo", "demo")
		got := map[string]int{}
		for range rounds {
			host, _, err := net.SplitHostPort(alternateOf(t, unauthenticatedAllocate(t, c)))
			if err != nil {
				t.Fatal(err)
			}
			got[host]++
		}
		return got
	}
	v4 := seen(addrs[0].String())
	usable4 := map[string]bool{"127.0.0.2": true, "100.64.0.1": true}
	for _, ip := range private {
		usable4[ip] = true
	}
	for host := range v4 {
		if !usable4[host] {
			t.Errorf("IPv4 client redirected to %s", host)
		}
	}
	if len(v4) != 16 {
		t.Errorf("IPv4 client redirected to %d addresses (%v), want the 16 kept", len(v4), v4)
	}
	if v6 := seen(addrs[1].String()); len(v6) != 1 || v6["fd12::3"] != rounds {
		t.Errorf("IPv6 client redirected to %v, want fd12::3 only", v6)
	}
}
