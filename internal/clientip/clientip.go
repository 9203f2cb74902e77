// Package clientip says which addresses stand for one client when turnd
// counts per client address (rate limits, allocation quotas). An IPv6 host
// is given a whole /64 (RFC 4291 §2.5.4, RFC 8981 temporary addresses) and
// can rotate through it at will, so counting per /128 would count nothing.
// It knows nothing about sockets or STUN.
package clientip

import "net/netip"

// v6Bits is the IPv6 prefix one host controls.
const v6Bits = 64

// Key returns the address that counts for a: an IPv4 address (or an
// IPv4-mapped IPv6 one) as itself, an IPv6 address as the first address of
// its /64, zone dropped. The zero Addr stays zero. It does not allocate.
func Key(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if !a.Is6() {
		return a
	}
	p, _ := a.WithZone("").Prefix(v6Bits) // cannot fail: 64 bits fit an IPv6 address
	return p.Addr()
}
