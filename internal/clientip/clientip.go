// Package clientip says which addresses stand for one client when turnd
// counts per client address (rate limits, allocation quotas, connection
// caps), and which stand for one network when it counts per prefix. An IPv6
// host is given a whole /64 (RFC 4291 §2.5.4, RFC 8981 temporary addresses)
// and can rotate through it at will, so counting per /128 would count
// nothing; a site is given up to a /48 (RFC 6177; tunnel brokers hand one out
// for free), so counting only per /64 lets one site fill every slot.
// It knows nothing about sockets or STUN.
package clientip

import "net/netip"

// v6Bits is the IPv6 prefix one host controls.
const v6Bits = 64

// Prefix lengths one network is counted by: an IPv4 /24 (the longest prefix
// routed between networks) and an IPv6 /48 (one site's assignment; it holds
// a /56 too).
const (
	v4PrefixBits = 24
	v6PrefixBits = 48
)

// Key returns the address that counts for a: an IPv4 address (or an
// IPv4-mapped IPv6 one) as itself, an IPv6 address as the first address of
// its /64, zone dropped. The zero Addr stays zero. It does not allocate.
func Key(a netip.Addr) netip.Addr { return first(a, 32, v6Bits) }

// PrefixKey returns the address that counts for a's network: the first
// address of its IPv4 /24 or IPv6 /48 (an IPv4-mapped address as IPv4),
// zone dropped. PrefixKey(Key(a)) is PrefixKey(a). The zero Addr stays
// zero. It does not allocate.
func PrefixKey(a netip.Addr) netip.Addr { return first(a, v4PrefixBits, v6PrefixBits) }

// first is the first address of a's IPv4 or IPv6 prefix of the given length.
func first(a netip.Addr, v4, v6 int) netip.Addr {
	a = a.Unmap()
	bits := v4
	switch {
	case !a.IsValid():
		return a
	case a.Is6():
		bits = v6
	}
	p, _ := a.WithZone("").Prefix(bits) // cannot fail: the length fits the family
	return p.Addr()
}
