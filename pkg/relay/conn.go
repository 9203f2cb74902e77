package relay

import (
	"net"
	"sync"
)

// countingConn is a relay socket that counts what crosses it and forgets
// itself in the generator when closed.
type countingConn struct {
	*net.UDPConn
	counters *Counters
	release  func()
	once     sync.Once
}

// ReadFrom is on the per-packet path: no allocation, two atomic adds.
func (c *countingConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.UDPConn.ReadFrom(p)
	if err == nil {
		c.counters.FromPeerPackets.Add(1)
		c.counters.FromPeerBytes.Add(uint64(n))
	}
	return n, addr, err
}

// WriteTo is on the per-packet path: no allocation, two atomic adds.
func (c *countingConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	n, err := c.UDPConn.WriteTo(p, addr)
	if err == nil {
		c.counters.ToPeerPackets.Add(1)
		c.counters.ToPeerBytes.Add(uint64(n))
	}
	return n, err
}

// Close closes the socket once and untracks it.
func (c *countingConn) Close() error {
	err := c.UDPConn.Close()
	c.once.Do(c.release)
	return err
}
