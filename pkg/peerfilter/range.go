package peerfilter

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// Range is an inclusive range of IP addresses of one family. The zero Range
// contains nothing. Ranges are values: copy them freely.
type Range struct {
	first, last netip.Addr
}

// ParseEntry parses one allowed or denied entry: an IP address ("10.0.0.1",
// "::1"), a CIDR ("10.0.0.0/8") or an inclusive "first-last" range
// ("10.0.0.1-10.0.0.9") whose ends are of the same family with first <= last.
//
// IPv4-mapped IPv6 input ("::ffff:10.0.0.1", "::ffff:10.0.0.0/104") is turned
// into IPv4, because the Filter judges mapped peers as their IPv4 address.
// A CIDR with host bits set ("10.0.0.1/8") is refused as a likely typo, and
// zones ("fe80::1%eth0") are refused because peers carry none.
func ParseEntry(s string) (Range, error) {
	switch {
	case strings.Contains(s, "/"):
		return parsePrefix(s)
	case strings.Contains(s, "-"):
		return parseFirstLast(s)
	}
	a, err := parseAddr(s, s)
	if err != nil {
		return Range{}, err
	}
	return Range{first: a, last: a}, nil
}

func parseAddr(s, entry string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil && s == entry:
		return netip.Addr{}, fmt.Errorf("%w %q: not an IP address, CIDR or first-last range", ErrInvalidEntry, entry)
	case err != nil:
		return netip.Addr{}, fmt.Errorf("%w %q: %q is not an IP address", ErrInvalidEntry, entry, s)
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%w %q: zones are not allowed", ErrInvalidEntry, entry)
	}
	return a.Unmap(), nil
}

func parsePrefix(s string) (Range, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return Range{}, fmt.Errorf("%w %q: not a valid CIDR", ErrInvalidEntry, s)
	}
	if m := p.Masked(); m != p {
		return Range{}, fmt.Errorf("%w %q: host bits are set (did you mean %s?)", ErrInvalidEntry, s, m)
	}
	// A mapped prefix is a prefix of IPv4 space once the 96-bit ::ffff:0:0
	// head is dropped; the host-bits check above guarantees Bits() >= 96.
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	r := rangeOf(p)
	if r.last.Is4In6() {
		// Only ::/80 ends inside ::ffff:0:0/96. Mapped peers are judged as
		// IPv4, so that tail is never contained: end the range before it.
		r.last = netip.MustParseAddr("::fffe:ffff:ffff")
	}
	return r, nil
}

func parseFirstLast(s string) (Range, error) {
	lo, hi, _ := strings.Cut(s, "-")
	if strings.Contains(hi, "-") {
		return Range{}, fmt.Errorf("%w %q: a range has exactly one '-'", ErrInvalidEntry, s)
	}
	first, err := parseAddr(lo, s)
	if err != nil {
		return Range{}, err
	}
	last, err := parseAddr(hi, s)
	if err != nil {
		return Range{}, err
	}
	if first.BitLen() != last.BitLen() {
		return Range{}, fmt.Errorf("%w %q: both ends must be of the same address family", ErrInvalidEntry, s)
	}
	if first.Compare(last) > 0 {
		return Range{}, fmt.Errorf("%w %q: first address is after last", ErrInvalidEntry, s)
	}
	return Range{first: first, last: last}, nil
}

// rangeOf converts a masked prefix without unmapping it, so the built-in list
// can name ::ffff:0:0/96 as the IPv6 range it is.
func rangeOf(p netip.Prefix) Range {
	return Range{first: p.Addr(), last: lastOf(p)}
}

// lastOf returns the highest address of the masked prefix p.
func lastOf(p netip.Prefix) netip.Addr {
	if p.Addr().Is4() {
		b := p.Addr().As4()
		n := binary.BigEndian.Uint32(b[:]) | ^uint32(0)>>p.Bits()
		binary.BigEndian.PutUint32(b[:], n)
		return netip.AddrFrom4(b)
	}
	b := p.Addr().As16()
	for i := p.Bits(); i < 128; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	return netip.AddrFrom16(b)
}

// First returns the lowest address of r.
func (r Range) First() netip.Addr { return r.first }

// Last returns the highest address of r (inclusive).
func (r Range) Last() netip.Addr { return r.last }

// Contains reports whether a lies in r. Like the Filter, it judges an
// IPv4-mapped address as its IPv4 form and ignores zones, so an IPv6 Range
// never contains an IPv4-mapped address. It does not allocate.
func (r Range) Contains(a netip.Addr) bool {
	if !a.IsValid() || !r.first.IsValid() {
		return false
	}
	a = a.Unmap().WithZone("")
	if a.BitLen() != r.first.BitLen() {
		return false
	}
	return r.first.Compare(a) <= 0 && a.Compare(r.last) <= 0
}

// String returns r in the shortest form ParseEntry accepts back: a single
// address, a CIDR when r is exactly one, or "first-last".
func (r Range) String() string {
	if !r.first.IsValid() {
		return "invalid Range"
	}
	if r.first == r.last {
		return r.first.String()
	}
	for bits := 0; bits < r.first.BitLen(); bits++ {
		p := netip.PrefixFrom(r.first, bits)
		if p.Masked().Addr() == r.first && lastOf(p) == r.last {
			return p.String()
		}
	}
	return r.first.String() + "-" + r.last.String()
}
