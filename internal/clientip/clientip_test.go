package clientip

import (
	"net/netip"
	"testing"
)

func TestKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::"},
		{"2001:db8:1:2::1", "2001:db8:1:2::"},
		{"2001:db8:1:3::1", "2001:db8:1:3::"},
		{"fe80::1%eth0", "fe80::"},
		{"::1", "::"},
	}
	for _, tt := range tests {
		if got := Key(netip.MustParseAddr(tt.in)); got != netip.MustParseAddr(tt.want) {
			t.Errorf("Key(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := Key(netip.Addr{}); got.IsValid() {
		t.Errorf("Key(zero) = %s, want the zero Addr", got)
	}
}

// TestPrefixKey: every address of an IPv4 /24 or an IPv6 /48 (so of each
// /56 and /64 inside it) counts as one network, the next prefix as another,
// and a host's Key lies in its own network.
func TestPrefixKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.0"},
		{"192.0.2.255", "192.0.2.0"},
		{"192.0.3.1", "192.0.3.0"},
		{"::ffff:192.0.2.7", "192.0.2.0"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1::"},
		{"2001:db8:1:ff00::1", "2001:db8:1::"}, // another /56 of the same /48
		{"2001:db8:1:ffff:ffff:ffff:ffff:ffff", "2001:db8:1::"},
		{"2001:db8:2::1", "2001:db8:2::"},
		{"fd00:1:2:3::1%eth0", "fd00:1:2::"},
		{"::1", "::"},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.in)
		if got := PrefixKey(a); got != netip.MustParseAddr(tt.want) {
			t.Errorf("PrefixKey(%s) = %s, want %s", tt.in, got, tt.want)
		}
		if got, want := PrefixKey(Key(a)), PrefixKey(a); got != want {
			t.Errorf("PrefixKey(Key(%s)) = %s, want %s", tt.in, got, want)
		}
	}
	if got := PrefixKey(netip.Addr{}); got.IsValid() {
		t.Errorf("PrefixKey(zero) = %s, want the zero Addr", got)
	}
}

func TestKeysDoNotAllocate(t *testing.T) {
	a := netip.MustParseAddr("2001:db8:1:2:aaaa:bbbb:cccc:dddd")
	if n := testing.AllocsPerRun(100, func() { _ = Key(a) }); n != 0 {
		t.Errorf("Key allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = PrefixKey(a) }); n != 0 {
		t.Errorf("PrefixKey allocates %v times, want 0", n)
	}
}
