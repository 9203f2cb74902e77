package server

import (
	"maps"
	"sync"
	"time"

	"github.com/turnd/turnd/pkg/allocation"
)

// fleetRates is what the fleet's client offers limits.user_total_bps:
// *fleet.Client satisfies it. Neither method may wait on the network.
type fleetRates interface {
	// PublishRates sets this node's measured bit rate per user for the
	// fleet's next heartbeat.
	PublishRates(rates map[string]uint64)
	// OthersRate is the sum of the other live nodes' last published rates
	// for user; 0 when unknown or the fleet is down.
	OthersRate(user string) uint64
}

// fleetShare is userRates' view of the fleet, read under userRates.mu:
// the rates source and this node's last measured rate per user.
type fleetShare struct {
	rates fleetRates        // nil: no fleet, each node holds the whole limit
	own   map[string]uint64 // bit/s per user at the last sample
	meter userMeter
}

// allowance is this node's share of user's limit (bit/s; 0 none): the
// whole limit without a fleet, else fleetAllowance of the last figures.
func (f *fleetShare) allowance(limit int64, user string) int64 {
	if f.rates == nil || limit <= 0 {
		return limit
	}
	return fleetAllowance(limit, f.own[user], f.rates.OthersRate(user))
}

// fleetAllowance is the rate a node holds a user to when the user relays
// own bit/s here and others on the other live nodes, against a fleet-wide
// limit (> 0).
func fleetAllowance(limit int64, own, others uint64) int64 {
	// A user new here, or whose other nodes' beat-old figures claim the
	// whole limit, still gets a usable start; the overshoot stays limit/8 a node.
	floor := max(limit/8, 1)
	l, o, r := float64(limit), float64(others), float64(own)
	a := l - o
	if r+o > l {
		// Over the limit each node scales itself down by the fleet's
		// excess; each taking the whole excess off would overcorrect
		// together and oscillate.
		a = l * r / (r + o)
	}
	return max(int64(a), floor)
}

// setFleetRates shares limits.user_total_bps across the fleet through f
// (nil: this node alone again) and applies the allowances at once.
func (s *Server) setFleetRates(f fleetRates) {
	s.userRates.mu.Lock()
	s.userRates.fleet.rates, s.userRates.fleet.own = f, nil
	s.userRates.mu.Unlock()
	s.userRates.set(s.limits)
}

// sampleFleetRates measures the relayed rate of each user with a
// user_total_bps limit and allocations here, publishes it to the fleet,
// and sets every user's allowance from it and the other nodes' figures.
// It reads the allocations' tallies, never touches the packet path.
func (s *Server) sampleFleetRates(now time.Time) {
	u := &s.userRates
	u.mu.Lock()
	f := u.fleet.rates
	limited := make(map[string]bool, len(u.m))
	l := s.limits()
	for user := range u.m {
		if userTotalFor(l, user) > 0 {
			limited[user] = true
		}
	}
	u.mu.Unlock()
	if f == nil {
		return
	}
	var live []allocWire
	if len(limited) > 0 { // no limited user: no walk of the table
		for _, a := range s.table.Allocations() {
			if limited[a.User] {
				live = append(live, allocWire{a: a, user: a.User, bytes: wireBytes(a)})
			}
		}
	}
	own := u.fleet.meter.rates(now, live, limited)
	f.PublishRates(own)
	u.mu.Lock()
	if u.fleet.rates == f { // not replaced meanwhile
		u.fleet.own = own
	}
	u.mu.Unlock()
	u.set(s.limits)
}

// Header bytes the relay charges each datagram of a UDP relay, by family.
const (
	wireHeader4 = 20 + 8
	wireHeader6 = 40 + 8
)

// wireBytes is what a's traffic weighs each way on the wire, as the
// user's rate charges it: payload plus one IP and UDP header a datagram
// (at its first family's size; none for an RFC 6062 relay).
func wireBytes(a *allocation.Allocation) [2]uint64 {
	us := a.Usage()
	var h uint64
	if !a.PeerTCP {
		h = wireHeader6
		if firstRelayed(a).Addr().Is4() {
			h = wireHeader4
		}
	}
	return [2]uint64{us.ToPeerBytes + us.ToPeerPackets*h, us.FromPeerBytes + us.FromPeerPackets*h}
}

// allocWire is one allocation's wire bytes each way at a sample.
type allocWire struct {
	a     *allocation.Allocation
	user  string
	bytes [2]uint64 // to the peer, from the peer
}

// userMeter turns successive samples of the allocations' byte totals
// into a bit rate per user: the larger way, as both ways are held to
// the limit and one setter sets both.
type userMeter struct {
	mu   sync.Mutex
	at   time.Time
	prev map[*allocation.Allocation][2]uint64
	last map[string]uint64
}

// rates returns the rate of each of users since the previous sample (0 for
// those with no traffic). The first sample only sets the baseline; later,
// an allocation not seen before counts from zero (it opened since), and
// one that ended since is not counted for its last interval.
func (m *userMeter) rates(now time.Time, live []allocWire, users map[string]bool) map[string]uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]uint64, len(users))
	for user := range users {
		out[user] = 0
	}
	el := now.Sub(m.at)
	if !m.at.IsZero() && el <= 0 {
		return maps.Clone(m.last) // a repeated sample: no interval to measure
	}
	first := m.at.IsZero()
	cur := make(map[*allocation.Allocation][2]uint64, len(live))
	sums := make(map[string][2]uint64, len(users))
	for _, w := range live {
		cur[w.a] = w.bytes
		if first {
			continue
		}
		p := m.prev[w.a] // zero: opened since the last sample
		s := sums[w.user]
		for i := range 2 {
			if w.bytes[i] > p[i] {
				s[i] += w.bytes[i] - p[i]
			}
		}
		sums[w.user] = s
	}
	if !first {
		for user, s := range sums {
			out[user] = uint64(float64(max(s[0], s[1])) * 8 / el.Seconds())
		}
	}
	m.at, m.prev, m.last = now, cur, out
	return maps.Clone(out)
}
