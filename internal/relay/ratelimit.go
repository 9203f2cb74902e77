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

// bucket holds traffic to a rate in bits per second: a token bucket kept
// as the time its debt is paid off (GCRA), so one compare-and-swap updates
// it, with no lock and no allocation.
type bucket struct {
	bps atomic.Int64 // 0: unlimited
	tat atomic.Int64 // when the traffic let through so far is paid for, in nanoseconds on the relay's clock
}

// set changes the rate and forgets the debt run up at the old one: a rate
// raised by a reload applies at once, not after paying for a slower past.
// Setting the same rate again changes nothing.
func (b *bucket) set(bps int64) {
	if b.bps.Swap(bps) != bps {
		b.tat.Store(0)
	}
}

// take reports whether n more bytes fit the rate at now, and charges them.
//
// Hot path: no allocation.
func (b *bucket) take(n int, now int64) bool {
	bps := b.bps.Load()
	if bps <= 0 {
		return true
	}
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

// refund gives back n bytes take charged, for traffic that was not relayed
// after all. Debt paid off meanwhile is not credited twice: take never
// starts before now.
func (b *bucket) refund(n int) {
	if bps := b.bps.Load(); bps > 0 {
		b.tat.Add(-int64(n) * 8 * int64(time.Second) / bps)
	}
}

// limit holds one direction of one allocation to its own rate
// (limits.max_bps) and to its user's (limits.user_total_bps), a bucket the
// user's allocations share: a datagram passes if it fits both.
type limit struct {
	own  bucket
	user atomic.Pointer[bucket] // nil: no per-user rate
}

// limited reports whether the limit holds anything back: the kernel path
// applies no rate, so a limited allocation stays in user space.
func (l *limit) limited() bool { return l.own.bps.Load() > 0 || l.user.Load() != nil }

// allow reports whether n more bytes fit the limit now, and charges them.
//
// Hot path: no allocation; two atomic loads when unlimited. The user's
// bucket is written by that user's allocations only.
func (l *limit) allow(n int, rl *Relay) bool {
	user := l.user.Load()
	if l.own.bps.Load() <= 0 && user == nil {
		return true
	}
	now := int64(rl.clock())
	if !l.own.take(n, now) {
		return false
	}
	if user != nil && !user.take(n, now) {
		l.own.refund(n)
		return false
	}
	return true
}

// refund gives back n bytes allow charged.
func (l *limit) refund(n int) {
	l.own.refund(n)
	if user := l.user.Load(); user != nil {
		user.refund(n)
	}
}

// SetRate holds the allocation whose relay was advertised as relayAddr
// to bps bits per second each way (0: unlimited), from its next packet on.
func (rl *Relay) SetRate(relayAddr net.Addr, bps int64) error {
	to, from, err := rl.limits(relayAddr)
	if err != nil {
		return fmt.Errorf("set rate of relay %v: %w", relayAddr, err)
	}
	to.own.set(bps)
	from.own.set(bps)
	rl.resyncKernel(relayAddr)
	return nil
}

// UserRate is a rate each way that several allocations draw on together:
// one user's limits.user_total_bps. The zero value is unlimited.
type UserRate struct {
	to, from bucket
}

// Set changes the rate to bps bits per second each way (0: unlimited).
func (u *UserRate) Set(bps int64) {
	u.to.set(bps)
	u.from.set(bps)
}

// Rate returns the rate each way, in bits per second (0: unlimited).
func (u *UserRate) Rate() int64 { return u.to.bps.Load() }

// ShareRate holds the allocation whose relay was advertised as relayAddr
// to u as well as to its own rate, from its next packet on; nil lets it go.
func (rl *Relay) ShareRate(relayAddr net.Addr, u *UserRate) error {
	to, from, err := rl.limits(relayAddr)
	if err != nil {
		return fmt.Errorf("share rate of relay %v: %w", relayAddr, err)
	}
	if u == nil {
		to.user.Store(nil)
		from.user.Store(nil)
		rl.resyncKernel(relayAddr)
		return nil
	}
	to.user.Store(&u.to)
	from.user.Store(&u.from)
	rl.resyncKernel(relayAddr)
	return nil
}

// limits finds the two limits of the live relay advertised as relayAddr.
func (rl *Relay) limits(relayAddr net.Addr) (to, from *limit, err error) {
	if k, ok := tcpKey(relayAddr); ok {
		t := rl.trafficOf(k)
		if t == nil {
			return nil, nil, ErrNotTracked
		}
		return &t.toRate, &t.fromRate, nil
	}
	ua, ok := relayAddr.(*net.UDPAddr)
	if !ok {
		return nil, nil, ErrNotTracked
	}
	rl.mu.Lock()
	c := rl.live[liveKey{v6: ua.IP.To4() == nil, port: ua.Port}]
	rl.mu.Unlock()
	if c == nil {
		return nil, nil, ErrNotTracked
	}
	return c.toRate, c.fromRate, nil
}
