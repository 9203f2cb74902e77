package peerfilter

import (
	"encoding/binary"
	"net/netip"
)

// rangeSet holds ranges as integers split by family, so a lookup is a few
// integer comparisons per range. Lists are short (tens of entries), so a
// linear scan beats building an interval tree and stays allocation-free.
type rangeSet struct {
	v4 []span4
	v6 []span6
}

type span4 struct{ lo, hi uint32 }

// u128 is an IPv6 address as two big-endian halves.
type u128 struct{ hi, lo uint64 }

type span6 struct{ lo, hi u128 }

func newRangeSet(rs []Range) rangeSet {
	var s rangeSet
	for _, r := range rs {
		if r.first.Is4() {
			s.v4 = append(s.v4, span4{lo: v4int(r.first), hi: v4int(r.last)})
		} else {
			s.v6 = append(s.v6, span6{lo: v6int(r.first), hi: v6int(r.last)})
		}
	}
	return s
}

// contains reports whether an unmapped, zone-less a is in any range.
func (s rangeSet) contains(a netip.Addr) bool {
	if a.Is4() {
		n := v4int(a)
		for _, r := range s.v4 {
			if r.lo <= n && n <= r.hi {
				return true
			}
		}
		return false
	}
	n := v6int(a)
	for _, r := range s.v6 {
		if !n.less(r.lo) && !r.hi.less(n) {
			return true
		}
	}
	return false
}

func v4int(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func v6int(a netip.Addr) u128 {
	b := a.As16()
	return u128{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
}

func (x u128) less(y u128) bool {
	return x.hi < y.hi || (x.hi == y.hi && x.lo < y.lo)
}
