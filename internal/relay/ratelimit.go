package relay

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// burstAllowance is how far ahead of its rate an allocation may send: the
// token bucket's depth, in time. Media comes in bursts (a video key frame),
// and 100 ms at the rate absorbs one without letting a flow exceed its
// rate by more than that over any longer span.
const burstAllowance = 100 * time.Millisecond

// Each datagram is charged its payload and its IP and UDP headers on the
// relay's side: bit/s on the wire, so a flood of tiny datagrams is held
// like a flood of bytes.
const (
	udpHeader4 = 20 + 8
	udpHeader6 = 40 + 8
)

// udpHeader is the IP and UDP header of one datagram of the family.
func udpHeader(v6 bool) int {
	if v6 {
		return udpHeader6
	}
	return udpHeader4
}

// bucket holds one direction of one allocation to a rate in bits per
// second: a token bucket kept as the time its debt is paid off (GCRA), so
// one compare-and-swap updates it, with no lock and no allocation.
type bucket struct {
	bps atomic.Int64 // 0: unlimited
	tat atomic.Int64 // when the traffic let through so far is paid for, in nanoseconds on the relay's clock
}

// allow reports whether n more bytes fit the rate now, and charges them.
//
// Hot path: no allocation; one atomic load when unlimited.
func (b *bucket) allow(n int, rl *Relay) bool {
	bps := b.bps.Load()
	if bps <= 0 {
		return true
	}
	now := int64(time.Since(rl.epoch))
	cost := int64(n) * 8 * int64(time.Second) / bps
	for {
		tat := b.tat.Load()
		start := max(tat, now)
		if start-now > int64(burstAllowance) {
			return false
		}
		if b.tat.CompareAndSwap(tat, start+cost) {
			return true
		}
	}
}

// refund gives back n bytes allow charged, for traffic that was not
// relayed after all. Debt paid off meanwhile is not credited twice: allow
// never starts before now.
func (b *bucket) refund(n int) {
	if bps := b.bps.Load(); bps > 0 {
		b.tat.Add(-int64(n) * 8 * int64(time.Second) / bps)
	}
}

// SetRate holds the allocation whose relay was advertised as relayAddr
// to bps bits per second each way (0: unlimited), from its next packet on.
func (rl *Relay) SetRate(relayAddr net.Addr, bps int64) error {
	if k, ok := tcpKey(relayAddr); ok {
		return rl.tcpSetRate(k, relayAddr, bps)
	}
	ua, ok := relayAddr.(*net.UDPAddr)
	if !ok {
		return fmt.Errorf("set rate of relay %v: %w", relayAddr, ErrNotTracked)
	}
	rl.mu.Lock()
	c := rl.live[liveKey{v6: ua.IP.To4() == nil, port: ua.Port}]
	rl.mu.Unlock()
	if c == nil {
		return fmt.Errorf("set rate of relay %v: %w", relayAddr, ErrNotTracked)
	}
	c.toRate.bps.Store(bps)
	c.fromRate.bps.Store(bps)
	return nil
}
