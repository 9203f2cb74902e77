package server

import (
	"net"
	"sync"
	"time"

	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/config"
)

// RejectBandwidth is the Observer's reason for a 486 past limits.total_bps.
const RejectBandwidth = "bandwidth"

// rateFor is the limit in bits per second of each of user's allocations (0: none).
func rateFor(l config.Limits, user string) int64 {
	if bps, ok := l.UserMaxBPS[user]; ok {
		return bps
	}
	return l.MaxBPS
}

// userTotalFor is the limit in bits per second of all of user's
// allocations together (0: none).
func userTotalFor(l config.Limits, user string) int64 {
	if bps, ok := l.UserTotalBPSOverrides[user]; ok {
		return bps
	}
	return l.UserTotalBPS
}

// limitAllocation holds the allocation of user relaying at relayAddr to
// the rates l sets: its own, and shared, its user's.
func (s *Server) limitAllocation(l config.Limits, relayAddr net.Addr, user string, shared *relay.UserRate) error {
	if err := s.relay.SetRate(relayAddr, rateFor(l, user)); err != nil {
		return err
	}
	if shared == nil || userTotalFor(l, user) <= 0 {
		shared = nil // unlimited users' packets never touch a shared bucket
	}
	return s.relay.ShareRate(relayAddr, shared)
}

// applyRates sets every live allocation's limits from the config in force,
// so a reload reaches them too.
func (s *Server) applyRates() {
	s.userRates.set(s.limits)
	l := s.limits()
	for _, a := range s.table.Allocations() {
		shared := s.userRates.get(a.User)
		if shared == nil {
			continue // ended meanwhile: its rate is gone with it
		}
		_ = s.limitAllocation(l, relayAddrOf(a), a.User, shared)
	}
}

// limitNew holds a new allocation to the rates in force. A reload may
// apply its own to the allocation meanwhile (applyRates), and the last
// write wins: so it applies again until the config it applied is still
// the one in force.
func (s *Server) limitNew(relayAddr net.Addr, user string, shared *relay.UserRate) error {
	for {
		cfg := s.cfg.Load()
		if err := s.limitAllocation(cfg.Limits, relayAddr, user, shared); err != nil {
			return err
		}
		if s.cfg.Load() == cfg {
			return nil
		}
	}
}

// relayAddrOf is the address the relay knows a's rates by: its first
// relayed address, a TCP one for an RFC 6062 relay.
func relayAddrOf(a *allocation.Allocation) net.Addr {
	if a.PeerTCP {
		return net.TCPAddrFromAddrPort(firstRelayed(a))
	}
	return net.UDPAddrFromAddrPort(firstRelayed(a))
}

// limits returns the limits in force.
func (s *Server) limits() config.Limits { return s.cfg.Load().Limits }

// userRates holds the rates of limits.user_total_bps: one relay.UserRate
// per user with live allocations, which those allocations alone draw on,
// so the per-packet cost of one user's limit falls on that user's traffic
// only. Taken per allocation and per reload, never per packet.
type userRates struct {
	mu    sync.Mutex
	m     map[string]*userRate
	fleet fleetShare // with a fleet, the limit is shared across its nodes
}

type userRate struct {
	rate        relay.UserRate
	allocations int
}

// acquire counts one more allocation of user and returns the user's rate.
// A user's first allocation sets it from the limits in force, read under
// u.mu so that a reload's set either follows or is read; later ones leave
// it as it is, which a reload may have changed since their config was read.
func (u *userRates) acquire(user string, limits func() config.Limits) *relay.UserRate {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = make(map[string]*userRate)
	}
	r := u.m[user]
	if r == nil {
		r = &userRate{}
		r.rate.Set(u.fleet.allowance(userTotalFor(limits(), user), user))
		u.m[user] = r
	}
	r.allocations++
	return &r.rate
}

// release counts one allocation of user fewer, and forgets the user's rate
// with the last.
func (u *userRates) release(user string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if r := u.m[user]; r != nil {
		if r.allocations--; r.allocations <= 0 {
			delete(u.m, user)
		}
	}
}

// get returns user's rate; nil when the user holds no allocation.
func (u *userRates) get(user string) *relay.UserRate {
	u.mu.Lock()
	defer u.mu.Unlock()
	if r := u.m[user]; r != nil {
		return &r.rate
	}
	return nil
}

// set gives every user's rate its value from the limits in force, read
// under u.mu (see acquire), and with a fleet from its last figures.
func (u *userRates) set(limits func() config.Limits) {
	u.mu.Lock()
	defer u.mu.Unlock()
	l := limits()
	for user, r := range u.m {
		r.rate.Set(u.fleet.allowance(userTotalFor(l, user), user))
	}
}

// throughput estimates the relayed bit rate from the traffic totals, for
// limits.total_bps. It is sampled when an Allocate asks, not on a timer:
// the rate is the average since the previous sample at least a second old.
type throughput struct {
	mu    sync.Mutex
	at    time.Time
	bytes uint64
	bps   float64
}

// rate returns the estimate at now; total reads the byte total, only when
// a sample is due (it may have to settle the kernel's counts).
func (t *throughput) rate(now time.Time, total func() uint64) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at.IsZero() {
		t.at, t.bytes = now, total()
		return 0
	}
	if el := now.Sub(t.at); el >= time.Second {
		n := total()
		t.bps = float64(n-t.bytes) * 8 / el.Seconds()
		t.at, t.bytes = now, n
	}
	return t.bps
}

// overCapacity reports whether the server relays more than total_bps:
// what it relayed, on the wire (payload and IP and UDP headers, as
// max_bps counts), never what it dropped.
func (s *Server) overCapacity() bool {
	limit := s.cfg.Load().Limits.TotalBPS
	if limit <= 0 {
		return false
	}
	return s.relayedBPS() >= float64(limit)
}

// relayedBPS is the bit rate relayed both ways, on the wire, as sampled
// at most once a second.
func (s *Server) relayedBPS() float64 {
	c := s.relay.Counters()
	return s.load.rate(time.Now(), func() uint64 {
		c.Settle()
		return c.ToPeerBytes.Load() + c.FromPeerBytes.Load() + c.HeaderBytes.Load()
	})
}

// allocRates pairs each allocation's Created with its Ended in whichever
// order they come: an allocation can end (a Close, a Disconnect) between
// its insert and its Created, and its user's shared rate must then be
// neither taken nor kept. Taken per allocation, never per packet.
type allocRates struct {
	mu   sync.Mutex
	seen map[*allocation.Allocation]bool // true: acquired; false: ended before its Created
}

// created runs acquire for a unless a has ended already, and reports
// whether it ran.
func (r *allocRates) created(a *allocation.Allocation, acquire func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if acquired, ok := r.seen[a]; ok && !acquired {
		delete(r.seen, a)
		return false
	}
	if r.seen == nil {
		r.seen = make(map[*allocation.Allocation]bool)
	}
	r.seen[a] = true
	acquire()
	return true
}

// ended runs release for a if created acquired for it.
func (r *allocRates) ended(a *allocation.Allocation, release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[a] {
		delete(r.seen, a)
		release()
		return
	}
	if r.seen == nil {
		r.seen = make(map[*allocation.Allocation]bool)
	}
	r.seen[a] = false
}
