package clientip

import "net/netip"

// Counts counts what clients hold (connections, allocations) per client
// (Key) and per network (PrefixKey) at once, so that a cap on either reads
// one number. The zero value is empty and ready; it is not safe for
// concurrent use (its owner's lock guards it).
type Counts struct {
	host, network map[netip.Addr]int
}

// Add counts one more for the client at a.
func (c *Counts) Add(a netip.Addr) {
	if c.host == nil {
		c.host, c.network = make(map[netip.Addr]int), make(map[netip.Addr]int)
	}
	c.host[Key(a)]++
	c.network[PrefixKey(a)]++
}

// Remove takes back one that Add counted for a; a key reaching zero is
// forgotten, so the maps hold only clients that hold something.
func (c *Counts) Remove(a netip.Addr) {
	uncount(c.host, Key(a))
	uncount(c.network, PrefixKey(a))
}

// Host returns the count of a's client (its IPv4 address or IPv6 /64).
func (c *Counts) Host(a netip.Addr) int { return c.host[Key(a)] }

// Network returns the count of a's network (its IPv4 /24 or IPv6 /48).
func (c *Counts) Network(a netip.Addr) int { return c.network[PrefixKey(a)] }

func uncount(m map[netip.Addr]int, k netip.Addr) {
	if n := m[k] - 1; n > 0 {
		m[k] = n
	} else {
		delete(m, k)
	}
}
