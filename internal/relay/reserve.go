package relay

import (
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/turnd/turnd/internal/mmsg"
)

// reservationHold is how long the odd port of a reserved pair stays bound
// for its RESERVATION-TOKEN (RFC 8656 §7.2: 30 seconds).
const reservationHold = 30 * time.Second

// held is the second port of a reserved pair, bound and waiting. It ends
// with the allocation on the first port (releasePartner): otherwise
// Allocate with EVEN-PORT, Refresh 0, repeated, would hold ports that no
// allocation quota counts.
type held struct {
	conn  *mmsg.Socket
	timer *time.Timer
	until time.Time // when timer closes it, for a hand-over (ExportHeld)
}

// openPair is openUDP on an even port P of its own choice, holding P+1
// for reservationHold; it returns the held port too.
func (rl *Relay) openPair(s udpSpec) (*Conn, net.IP, int, error) {
	bind, _, v6, err := rl.family(s.network)
	if err != nil {
		return nil, nil, 0, err
	}
	lo := rl.opts.MinPort + rl.opts.MinPort%2 // first even port
	pairs := (rl.opts.MaxPort - lo + 1) / 2
	if pairs <= 0 {
		return nil, nil, 0, fmt.Errorf("allocate relay pair: %w", ErrNoFreePort)
	}
	start := rand.IntN(pairs)
	for i := 0; i < pairs; i++ {
		p := lo + 2*((start+i)%pairs)
		if rl.tcpHolds(v6, p+1) { // an RFC 6062 relay's port: a UDP bind would not notice
			continue
		}
		odd, err := listenRelay(s.network, bind, p+1)
		if err != nil {
			continue
		}
		s.port = p
		cc, external, err := rl.openUDP(s)
		if err != nil {
			_ = odd.Close()
			continue
		}
		rl.mu.Lock()
		rl.holdPort(liveKey{v6: v6, port: p + 1}, odd, reservationHold)
		rl.mu.Unlock()
		return cc, external, p + 1, nil
	}
	return nil, nil, 0, fmt.Errorf("allocate relay pair: %w", ErrNoFreePort)
}

// holdPort records conn as the held port k for d, then closes it unless
// taken (takeHeld) or released meanwhile. Called with rl.mu held.
func (rl *Relay) holdPort(k liveKey, conn *mmsg.Socket, d time.Duration) {
	h := &held{conn: conn, until: time.Now().Add(d)}
	h.timer = time.AfterFunc(d, func() {
		rl.mu.Lock()
		if rl.held[k] == h {
			delete(rl.held, k)
		}
		rl.mu.Unlock()
		_ = conn.Close()
	})
	rl.held[k] = h
}

// releasePartner closes the held P+1 of the allocation on port P (key),
// if it is still waiting for its token.
func (rl *Relay) releasePartner(key liveKey) {
	if key.port%2 != 0 {
		return // only an even port has a partner
	}
	if conn := rl.takeHeld(liveKey{v6: key.v6, port: key.port + 1}); conn != nil {
		_ = conn.Close()
	}
}

// takeHeld hands over the held socket of a reserved port, if there is one.
func (rl *Relay) takeHeld(k liveKey) *mmsg.Socket {
	rl.mu.Lock()
	h := rl.held[k]
	delete(rl.held, k)
	rl.mu.Unlock()
	if h == nil || !h.timer.Stop() {
		return nil // expired: its timer is closing it
	}
	return h.conn
}
