package relay

import (
	"net"
	"sync"
	"time"

	"github.com/turnd/turnd/internal/bindings"
)

// The traffic of RFC 6062 relays: the edge's pipe copies each bound peer
// connection to and from the client's data connection, through its
// peerConn, so that is where turnd counts and paces the bytes. A
// byte stream cannot drop what is past max_bps as a datagram relay does;
// its reads and writes wait instead, which TCP's flow control passes back
// to the sender.

// tcpTraffic is what the peer connections of one RFC 6062 relay share.
type tcpTraffic struct {
	route            *bindings.Route // its Usage is the relay's tally
	toRate, fromRate limit
	gone             chan struct{}
	goneOnce         sync.Once
}

func newTCPTraffic(r *bindings.Route) *tcpTraffic {
	return &tcpTraffic{route: r, gone: make(chan struct{})}
}

// end stops the relay's traffic: pacing waits return, and reads and writes fail.
func (t *tcpTraffic) end() { t.goneOnce.Do(func() { close(t.gone) }) }

func (t *tcpTraffic) ended() bool {
	select {
	case <-t.gone:
		return true
	default:
		return false
	}
}

// minTCPChunk is the smallest piece a paced peer connection reads or
// writes at once: smaller would cost a system call per few packets.
const minTCPChunk = 1024

// tcpChunkSpan is how much of the rate one read or write of a paced
// connection may take: half the burst allowance, so a stream never needs
// the bucket empty to go on, and the datagrams of the user's UDP relays
// find room between its chunks.
const tcpChunkSpan = burstAllowance / 2

// chunk bounds one read or write of a paced connection to what the rate
// (the lower of the allocation's and its user's) lets through in
// tcpChunkSpan, so the pace is smooth at low rates; unlimited connections
// take p whole.
func (l *limit) chunk(p []byte) []byte {
	bps := l.own.bps.Load()
	if user := l.user.Load(); user != nil {
		if ubps := user.bps.Load(); ubps > 0 && (bps <= 0 || ubps < bps) {
			bps = ubps
		}
	}
	if bps <= 0 {
		return p
	}
	// Divided before it is multiplied, so no rate overflows.
	span := bps / 8 / int64(time.Second/tcpChunkSpan)
	return p[:min(len(p), max(minTCPChunk, int(min(span, int64(len(p))))))]
}

// reserve charges n bytes if they fit the bucket without taking it past
// its burst allowance (an empty bucket takes any n), and otherwise charges
// nothing and returns how long until they fit. A stream waits before it
// charges, never after: a bucket in debt would refuse every datagram of
// the user's UDP relays that shares it (take).
func (b *bucket) reserve(n int, now int64) time.Duration {
	bps := b.bps.Load()
	if bps <= 0 {
		return 0
	}
	cost := int64(n) * 8 * int64(time.Second) / bps
	for {
		tat := b.tat.Load()
		start := max(tat, now)
		if over := start - now - max(0, int64(burstAllowance)-cost); over > 0 {
			return time.Duration(over)
		}
		if b.tat.CompareAndSwap(tat, start+cost) {
			return 0
		}
	}
}

// reserve charges n bytes to the allocation's rate and its user's if they
// fit both, and otherwise charges neither and returns how long to wait.
func (l *limit) reserve(n int, rl *Relay) time.Duration {
	now := int64(rl.clock())
	if wait := l.own.reserve(n, now); wait > 0 {
		return wait
	}
	if user := l.user.Load(); user != nil {
		if wait := user.reserve(n, now); wait > 0 {
			l.own.refund(n)
			return wait
		}
	}
	return 0
}

// pace waits until n bytes fit l and charges them, or returns when the
// relay ends.
func (c *peerConn) pace(l *limit, n int) error {
	for {
		wait := l.reserve(n, c.rl)
		if wait <= 0 {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.traffic.gone:
			t.Stop()
			return net.ErrClosed
		}
	}
}

// readCounted reads from the peer, counts what came and paces it.
func (c *peerConn) readCounted(p []byte) (int, error) {
	if c.traffic.ended() {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(c.traffic.fromRate.chunk(p))
	if n > 0 {
		c.traffic.route.Usage.FromPeer(c.rl.opts.Counters, 1, n)
		if perr := c.pace(&c.traffic.fromRate, n); perr != nil && err == nil {
			err = perr
		}
	}
	return n, err
}

// writeCounted paces p to the peer, in chunks, and counts what went.
func (c *peerConn) writeCounted(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if c.traffic.ended() {
			return written, net.ErrClosed
		}
		chunk := c.traffic.toRate.chunk(p)
		if err := c.pace(&c.traffic.toRate, len(chunk)); err != nil {
			return written, err
		}
		n, err := c.Conn.Write(chunk)
		if n > 0 {
			c.traffic.route.Usage.ToPeer(c.rl.opts.Counters, n)
		}
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// trafficOf returns the shared traffic of the live RFC 6062 relay k.
func (rl *Relay) trafficOf(k liveKey) *tcpTraffic {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if r := rl.tcp[k]; r != nil {
		return r.traffic
	}
	return nil
}
