package peerfilter

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func mustNew(t testing.TB, o Options) *Filter {
	t.Helper()
	f, err := New(o)
	if err != nil {
		t.Fatalf("New(%+v): %v", o, err)
	}
	return f
}

func TestAllowedAddr(t *testing.T) {
	var (
		defaults = Options{}
		loopback = Options{AllowLoopback: true}
	)
	tests := []struct {
		name string
		opts Options
		peer string
		want bool
	}{
		// Loopback in every disguise.
		{"loopback v4", defaults, "127.0.0.1", false},
		{"loopback v4 other", defaults, "127.1.2.3", false},
		{"loopback v6", defaults, "::1", false},
		{"loopback mapped", defaults, "::ffff:127.0.0.1", false},
		{"loopback NAT64", defaults, "64:ff9b::7f00:1", false},
		{"loopback 6to4", defaults, "2002:7f00:1::1", false},
		{"loopback IPv4-compatible", defaults, "::127.0.0.1", false},

		// Cloud metadata in every disguise.
		{"metadata", defaults, "169.254.169.254", false},
		{"metadata mapped", defaults, "::ffff:169.254.169.254", false},
		{"metadata NAT64", defaults, "64:ff9b::a9fe:a9fe", false},
		{"metadata 6to4", defaults, "2002:a9fe:a9fe::1", false},
		{"metadata IPv4-compatible", defaults, "::169.254.169.254", false},

		// Other built-in special-purpose ranges.
		{"this network", defaults, "0.0.0.0", false},
		{"unspecified v6", defaults, "::", false},
		{"broadcast", defaults, "255.255.255.255", false},
		{"reserved", defaults, "240.0.0.1", false},
		{"multicast v4", defaults, "224.0.0.1", false},
		{"multicast v4 top", defaults, "239.255.255.250", false},
		{"multicast v6", defaults, "ff02::1", false},
		{"link-local v6", defaults, "fe80::1", false},
		{"link-local v6 zoned", defaults, "fe80::1%eth0", false},
		{"CGNAT", defaults, "100.64.0.1", false},
		{"TEST-NET-1", defaults, "192.0.2.1", false},
		{"TEST-NET-2", defaults, "198.51.100.7", false},
		{"TEST-NET-3", defaults, "203.0.113.9", false},
		{"benchmarking", defaults, "198.19.255.255", false},
		{"6to4 anycast", defaults, "192.88.99.1", false},
		{"IETF v4", defaults, "192.0.0.8", false},
		{"documentation v6", defaults, "2001:db8::1", false},
		{"Teredo", defaults, "2001:0:4136:e378:8000:63bf:3fff:fdd2", false},
		{"discard-only", defaults, "100::1", false},
		{"ULA fc00::/8", defaults, "fc00::1", false},
		{"NAT64 of public", defaults, "64:ff9b::808:808", false},
		{"6to4 of public", defaults, "2002:808:808::1", false},
		{"local-use NAT64", defaults, "64:ff9b:1::a00:1", false},
		{"AWS metadata v6", defaults, "fd00:ec2::254", false},
		{"GCE metadata v6", defaults, "fd20:ce::254", false},
		{"OCI metadata v6", defaults, "fd00:c1::a9fe:a9fe", false},
		{"SIIT of public", defaults, "::ffff:0:808:808", false},
		{"site-local", defaults, "fec0::1", false},
		{"site-local last", defaults, "feff:ffff::1", false},
		{"documentation 3fff::/20", defaults, "3fff:fff::1", false},
		{"SRv6 SID", defaults, "5f00::1", false},
		{"dummy prefix", defaults, "100:0:0:1::1", false},

		// Allowed by default.
		{"public v4", defaults, "8.8.8.8", true},
		{"public v4 mapped", defaults, "::ffff:8.8.8.8", true},
		{"public v6", defaults, "2001:4860::8888", true},
		{"RFC 1918 10/8", defaults, "10.1.2.3", true},
		{"RFC 1918 172.16/12", defaults, "172.16.0.1", true},
		{"RFC 1918 192.168/16", defaults, "192.168.1.1", true},
		{"ULA fd00::/8", defaults, "fd00::1", true},
		{"ULA next to AWS metadata", defaults, "fd00:ec2::253", true},
		{"just above documentation 3fff::/20", defaults, "3fff:1000::1", true},
		{"AS112", defaults, "2620:4f:8000::1", true},
		{"just below CGNAT", defaults, "100.63.255.255", true},
		{"just above CGNAT", defaults, "100.128.0.0", true},
		{"just below multicast", defaults, "223.255.255.255", true},
		{"IPv4-compatible of public", defaults, "::8.8.8.8", true},

		// Allowed wins over Denied and the built-in list.
		{"allowed overrides denied", Options{Allowed: []string{"10.0.0.5"}, Denied: []string{"10.0.0.0/8"}}, "10.0.0.5", true},
		{"denied neighbour stays denied", Options{Allowed: []string{"10.0.0.5"}, Denied: []string{"10.0.0.0/8"}}, "10.0.0.6", false},
		{"allowed overrides built-in", Options{Allowed: []string{"100.64.0.0/10"}}, "100.64.0.1", true},
		{"allowed mapped entry", Options{Allowed: []string{"::ffff:100.64.0.1"}}, "100.64.0.1", true},

		// Loopback is judged before the lists.
		{"allowed list does not open loopback", Options{Allowed: []string{"127.0.0.0/8"}}, "127.0.0.1", false},
		{"allowed list does not open ::1", Options{Allowed: []string{"::1"}}, "::1", false},
		{"allow_loopback opens 127.0.0.1", loopback, "127.0.0.1", true},
		{"allow_loopback opens 127.0.0.0/8", loopback, "127.9.9.9", true},
		{"allow_loopback opens ::1", loopback, "::1", true},
		{"allow_loopback opens mapped", loopback, "::ffff:127.0.0.1", true},
		{"allow_loopback opens IPv4-compatible", loopback, "::127.0.0.1", true},
		// The NAT64 wrapper is itself a built-in denied range: allow_loopback
		// opens only the embedded form, so the prefix must be allowed too.
		{"allow_loopback leaves NAT64 prefix denied", loopback, "64:ff9b::7f00:1", false},
		{"allow_loopback plus allowed NAT64", Options{AllowLoopback: true, Allowed: []string{"64:ff9b::/96"}}, "64:ff9b::7f00:1", true},
		{"denied entry closes part of opened loopback", Options{AllowLoopback: true, Denied: []string{"127.0.0.1"}}, "127.0.0.1", false},
		{"allow_loopback does not open metadata", loopback, "169.254.169.254", false},

		// Every form must be allowed: reopening a wrapper does not reopen what it wraps.
		{"allowed NAT64 allows public", Options{Allowed: []string{"64:ff9b::/96"}}, "64:ff9b::808:808", true},
		{"allowed NAT64 still denies metadata", Options{Allowed: []string{"64:ff9b::/96"}}, "64:ff9b::a9fe:a9fe", false},
		{"allowed NAT64 still denies loopback", Options{Allowed: []string{"64:ff9b::/96"}}, "64:ff9b::7f00:1", false},
		{"allowed 6to4 still denies metadata", Options{Allowed: []string{"2002::/16"}}, "2002:a9fe:a9fe::1", false},
		{"allowed 6to4 allows public", Options{Allowed: []string{"2002::/16"}}, "2002:808:808::1", true},
		{"allowed NAT64 and metadata", Options{Allowed: []string{"64:ff9b::/96", "169.254.169.254"}}, "64:ff9b::a9fe:a9fe", true},
		{"denied embedded v4 closes compat", Options{Denied: []string{"8.8.8.0/24"}}, "::8.8.8.8", false},
		{"allowed opens local-use NAT64", Options{Allowed: []string{"64:ff9b:1::/48"}}, "64:ff9b:1::a00:1", true},
		{"allowed opens AWS metadata v6", Options{Allowed: []string{"fd00:ec2::254"}}, "fd00:ec2::254", true},
		{"allowed opens GCE metadata v6", Options{Allowed: []string{"fd20:ce::/64"}}, "fd20:ce::254", true},
		{"allowed opens site-local", Options{Allowed: []string{"fec0::/10"}}, "fec0::1", true},
		{"allowed SIIT allows public", Options{Allowed: []string{"::ffff:0:0:0/96"}}, "::ffff:0:808:808", true},
		{"allowed SIIT still denies metadata", Options{Allowed: []string{"::ffff:0:0:0/96"}}, "::ffff:0:a9fe:a9fe", false},

		// Ranges and CIDRs in Denied.
		{"denied CIDR", Options{Denied: []string{"10.0.0.0/8"}}, "10.200.0.1", false},
		{"denied CIDR outside", Options{Denied: []string{"10.0.0.0/8"}}, "11.0.0.1", true},
		{"denied range first", Options{Denied: []string{"10.0.0.1-10.0.0.9"}}, "10.0.0.1", false},
		{"denied range last", Options{Denied: []string{"10.0.0.1-10.0.0.9"}}, "10.0.0.9", false},
		{"denied range after", Options{Denied: []string{"10.0.0.1-10.0.0.9"}}, "10.0.0.10", true},
		{"denied range before", Options{Denied: []string{"10.0.0.1-10.0.0.9"}}, "10.0.0.0", true},
		{"denied v6 CIDR", Options{Denied: []string{"fd00::/8"}}, "fd12::1", false},
		{"denied v4 matches mapped peer", Options{Denied: []string{"10.0.0.0/8"}}, "::ffff:10.0.0.1", false},
		{"denied mapped entry matches v4 peer", Options{Denied: []string{"::ffff:10.0.0.0/104"}}, "10.0.0.1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustNew(t, tt.opts)
			a := netip.MustParseAddr(tt.peer)
			if got := f.AllowedAddr(a); got != tt.want {
				t.Errorf("AllowedAddr(%s) = %v, want %v", tt.peer, got, tt.want)
			}
			// net.ParseIP drops zones; the zone test is covered above.
			if ip := net.ParseIP(tt.peer); ip != nil {
				if got := f.Allowed(ip); got != tt.want {
					t.Errorf("Allowed(%s) = %v, want %v", tt.peer, got, tt.want)
				}
			}
		})
	}
}

func TestAllowedRejectsMalformed(t *testing.T) {
	f := mustNew(t, Options{Allowed: []string{"0.0.0.0/0", "::/0"}, AllowLoopback: true})
	for _, ip := range []net.IP{nil, {}, {1, 2, 3}, make(net.IP, 5)} {
		if f.Allowed(ip) {
			t.Errorf("Allowed(%v) = true, want false", []byte(ip))
		}
	}
	if f.AllowedAddr(netip.Addr{}) {
		t.Error("AllowedAddr(zero Addr) = true, want false")
	}
}

func TestNewReportsEveryBadEntry(t *testing.T) {
	_, err := New(Options{
		Allowed: []string{"10.0.0.1", "bogus"},
		Denied:  []string{"10.0.0.9-10.0.0.1", "10.0.0.0/8", "1.2.3.4/8"},
	})
	if err == nil {
		t.Fatal("New succeeded, want error")
	}
	if !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("error does not wrap ErrInvalidEntry: %v", err)
	}
	for _, want := range []string{`allowed[1]: invalid peer entry "bogus"`, "denied[0]:", "denied[2]:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "allowed[0]") || strings.Contains(err.Error(), "denied[1]") {
		t.Errorf("error %q blames a good entry", err)
	}
}

func TestBuiltinDenied(t *testing.T) {
	got := BuiltinDenied()
	want := []string{
		"0.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "192.0.0.0/24",
		"192.0.2.0/24", "192.88.99.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
		"224.0.0.0/4", "240.0.0.0/4",
		"::", "::1", "64:ff9b::/96", "64:ff9b:1::/48", "::ffff:0.0.0.0/96", "::ffff:0:0:0/96",
		"100::/64", "100:0:0:1::/64", "2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20", "5f00::/16",
		"fc00::/8", "fd00:ec2::254", "fd20:ce::254", "fd00:c1::a9fe:a9fe", "fe80::/10", "fec0::/10", "ff00::/8",
	}
	if len(got) != len(want) {
		t.Fatalf("BuiltinDenied() has %d ranges, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("BuiltinDenied()[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// Callers get their own copy.
	got[0] = Range{}
	if BuiltinDenied()[0].String() != "0.0.0.0/8" {
		t.Error("BuiltinDenied returned shared state")
	}
	// RFC 1918 and the used ULA half must stay open on purpose.
	for _, open := range []string{"10.0.0.0", "172.16.0.0", "192.168.0.0", "fd00::"} {
		for _, r := range BuiltinDenied() {
			if r.Contains(netip.MustParseAddr(open)) {
				t.Errorf("built-in range %v covers %s, which must stay allowed", r, open)
			}
		}
	}
}

func TestAllowedAddrDoesNotAllocate(t *testing.T) {
	f := mustNew(t, Options{Allowed: []string{"64:ff9b::/96"}, Denied: []string{"10.0.0.0/8", "fd00::/8"}})
	peers := []netip.Addr{
		netip.MustParseAddr("8.8.8.8"),
		netip.MustParseAddr("::ffff:169.254.169.254"),
		netip.MustParseAddr("64:ff9b::808:808"),
		netip.MustParseAddr("2001:4860::8888"),
		netip.MustParseAddr("fe80::1%eth0"),
	}
	ip := net.ParseIP("2002:a9fe:a9fe::1")
	allocs := testing.AllocsPerRun(100, func() {
		for _, p := range peers {
			f.AllowedAddr(p)
		}
		f.Allowed(ip)
	})
	if allocs != 0 {
		t.Errorf("AllowedAddr allocates %v times per run, want 0", allocs)
	}
}

func BenchmarkAllowedAddr(b *testing.B) {
	f := mustNew(b, Options{Denied: []string{"10.0.0.0/8", "fd00::/8"}})
	peers := []netip.Addr{
		netip.MustParseAddr("8.8.8.8"),
		netip.MustParseAddr("2001:4860::8888"),
		netip.MustParseAddr("64:ff9b::a9fe:a9fe"),
		netip.MustParseAddr("::ffff:192.168.1.1"),
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.AllowedAddr(peers[i%len(peers)])
	}
}

func BenchmarkAllowed(b *testing.B) {
	f := mustNew(b, Options{Denied: []string{"10.0.0.0/8", "fd00::/8"}})
	ip := net.ParseIP("8.8.8.8")
	b.ReportAllocs()
	for b.Loop() {
		f.Allowed(ip)
	}
}

func TestDeniedEntriesStillApplyToOpenedLoopback(t *testing.T) {
	f, err := New(Options{AllowLoopback: true, Denied: []string{"127.0.0.2", "::1"}})
	if err != nil {
		t.Fatal(err)
	}
	for ip, want := range map[string]bool{"127.0.0.1": true, "127.0.0.2": false, "::1": false, "::ffff:127.0.0.2": false} {
		if got := f.AllowedAddr(netip.MustParseAddr(ip)); got != want {
			t.Errorf("%s: allowed=%v, want %v", ip, got, want)
		}
	}
}
