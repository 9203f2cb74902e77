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

func TestKeyDoesNotAllocate(t *testing.T) {
	a := netip.MustParseAddr("2001:db8:1:2:aaaa:bbbb:cccc:dddd")
	if n := testing.AllocsPerRun(100, func() { _ = Key(a) }); n != 0 {
		t.Errorf("Key allocates %v times, want 0", n)
	}
}
