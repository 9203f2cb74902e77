package peerfilter

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseEntry(t *testing.T) {
	tests := []struct {
		in          string
		first, last string
		str         string // String() of the result
	}{
		{"10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.1"},
		{"::1", "::1", "::1", "::1"},
		{"::ffff:10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.1"},
		{"10.0.0.0/8", "10.0.0.0", "10.255.255.255", "10.0.0.0/8"},
		{"0.0.0.0/0", "0.0.0.0", "255.255.255.255", "0.0.0.0/0"},
		{"10.0.0.1/32", "10.0.0.1", "10.0.0.1", "10.0.0.1"},
		{"fe80::/10", "fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe80::/10"},
		{"::/0", "::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::/0"},
		{"::ffff:10.0.0.0/104", "10.0.0.0", "10.255.255.255", "10.0.0.0/8"},
		{"10.0.0.1-10.0.0.9", "10.0.0.1", "10.0.0.9", "10.0.0.1-10.0.0.9"},
		{"10.0.0.0-10.0.0.255", "10.0.0.0", "10.0.0.255", "10.0.0.0/24"},
		{"10.0.0.5-10.0.0.5", "10.0.0.5", "10.0.0.5", "10.0.0.5"},
		{"::ffff:10.0.0.1-10.0.0.9", "10.0.0.1", "10.0.0.9", "10.0.0.1-10.0.0.9"},
		{"2001:db8::1-2001:db8::ff", "2001:db8::1", "2001:db8::ff", "2001:db8::1-2001:db8::ff"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseEntry(tt.in)
			if err != nil {
				t.Fatalf("ParseEntry(%q): %v", tt.in, err)
			}
			if got, want := r.First(), netip.MustParseAddr(tt.first); got != want {
				t.Errorf("First() = %v, want %v", got, want)
			}
			if got, want := r.Last(), netip.MustParseAddr(tt.last); got != want {
				t.Errorf("Last() = %v, want %v", got, want)
			}
			if got := r.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
		})
	}
}

func TestParseEntryErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"", "not an IP address"},
		{"foo", "not an IP address"},
		{"10.0.0", "not an IP address"},
		{"10.0.0.1 ", "not an IP address"},
		{"10.0.0.0/33", "not a valid CIDR"},
		{"10.0.0.0/", "not a valid CIDR"},
		{"10.0.0.1/8", "host bits are set (did you mean 10.0.0.0/8?)"},
		{"fe80::1%eth0", "zones are not allowed"},
		{"fe80::1%eth0-fe80::2", "zones are not allowed"},
		{"10.0.0.9-10.0.0.1", "first address is after last"},
		{"10.0.0.1-::1", "same address family"},
		{"10.0.0.1-", "not an IP address"},
		{"-10.0.0.1", "not an IP address"},
		{"10.0.0.1-10.0.0.2-10.0.0.3", "exactly one '-'"},
		{"10.0.0.0/8-10.0.0.9", "not a valid CIDR"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseEntry(tt.in)
			if err == nil {
				t.Fatalf("ParseEntry(%q) succeeded, want error containing %q", tt.in, tt.want)
			}
			if !errors.Is(err, ErrInvalidEntry) {
				t.Errorf("error %q does not wrap ErrInvalidEntry", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestRangeContains(t *testing.T) {
	r, err := ParseEntry("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	r6, err := ParseEntry("fe80::/10")
	if err != nil {
		t.Fatal(err)
	}
	r80, err := ParseEntry("::/80") // stops short of ::ffff:0:0/96
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		r    Range
		a    netip.Addr
		want bool
	}{
		{r80, netip.MustParseAddr("::fffe:ffff:ffff"), true},
		{r80, netip.MustParseAddr("::ffff:1.2.3.4"), false}, // judged as IPv4 1.2.3.4
		{r, netip.MustParseAddr("10.0.0.0"), true},
		{r, netip.MustParseAddr("10.255.255.255"), true},
		{r, netip.MustParseAddr("11.0.0.0"), false},
		{r, netip.MustParseAddr("9.255.255.255"), false},
		{r, netip.MustParseAddr("::ffff:10.1.2.3"), true},
		{r, netip.MustParseAddr("::a01:203"), false}, // IPv4-compatible is IPv6 to a Range
		{r, netip.Addr{}, false},
		{r6, netip.MustParseAddr("fe80::1%eth0"), true},
		{r6, netip.MustParseAddr("10.0.0.1"), false},
		{Range{}, netip.Addr{}, false},
		{Range{}, netip.MustParseAddr("0.0.0.0"), false},
	}
	for _, tt := range tests {
		if got := tt.r.Contains(tt.a); got != tt.want {
			t.Errorf("%v.Contains(%v) = %v, want %v", tt.r, tt.a, got, tt.want)
		}
	}
}

// FuzzParseEntry checks that whatever ParseEntry accepts is a well-formed
// Range whose String parses back to the same Range.
func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{
		"10.0.0.1", "::1", "10.0.0.0/8", "::ffff:10.0.0.0/104", "10.0.0.1-10.0.0.9",
		"fe80::/10", "2001:db8::1-2001:db8::ff", "10.0.0.9-10.0.0.1", "fe80::1%eth0",
		"::ffff:1.2.3.4-::1", "1.2.3.4/8", "", "-", "/", "0.0.0.0/0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseEntry(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidEntry) {
				t.Fatalf("ParseEntry(%q) error %q does not wrap ErrInvalidEntry", s, err)
			}
			return
		}
		first, last := r.First(), r.Last()
		if !first.IsValid() || first.BitLen() != last.BitLen() || first.Compare(last) > 0 {
			t.Fatalf("ParseEntry(%q) = [%v, %v]: not a well-formed range", s, first, last)
		}
		if first.Is4In6() || last.Is4In6() || first.Zone() != "" || last.Zone() != "" {
			t.Fatalf("ParseEntry(%q) = [%v, %v]: mapped or zoned end", s, first, last)
		}
		if !r.Contains(first) || !r.Contains(last) {
			t.Fatalf("ParseEntry(%q) = %v does not contain its own ends", s, r)
		}
		back, err := ParseEntry(r.String())
		if err != nil {
			t.Fatalf("ParseEntry(String() = %q) of %q: %v", r.String(), s, err)
		}
		if back != r {
			t.Fatalf("round trip of %q: got %v, want %v", s, back, r)
		}
	})
}
