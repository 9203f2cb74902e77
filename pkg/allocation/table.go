package allocation

import (
	"crypto/rand"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/clientip"
	"github.com/turnd/turnd/internal/netaddr"
)

// Table is the only home of turnd's allocations: admission and quotas,
// relayed addresses and their lifetimes, permissions, channels,
// reservations, RFC 6062 connection records and why each allocation
// ended. It is safe for concurrent use: one mutex guards the maps and the
// counts, and Hooks run outside it. It starts no goroutine and no timer:
// Expire does the timed work, driven by Run or by a test's fake clock.
type Table struct {
	mu          sync.Mutex
	byTuple     map[netaddr.FiveTuple]*Allocation
	byRelay     map[netip.AddrPort]*Allocation
	byConn      map[uint32]*Allocation
	perUser     map[string]int  // live allocations and outstanding tickets
	clients     clientip.Counts // the same, per client address and network
	byTransport [numTransports]int
	admitted    int // outstanding tickets
	ending      int // ended, their Ended hook still running
	tokens      map[[8]byte]*reservation
	userTokens  map[string]int
	due         deadlines
	waiting     time.Time // the deadline Run sleeps until; zero: none

	admitting   atomic.Bool
	count       atomic.Int64
	limits      atomic.Pointer[Limits]
	changed     chan struct{}
	rescheduled chan struct{}
	hooks       Hooks
	random      func([]byte) // tokens and CONNECTION-IDs: crypto/rand, or a test's
}

// Hooks are the table's calls out, each made outside its lock (so a hook
// may call the table) and from the goroutine that caused the event.
type Hooks struct {
	// Ended is called once for every allocation that leaves the table,
	// whatever the reason: the one place to close its relay and write its
	// usage record.
	Ended func(a *Allocation, why EndReason)
	// FamilyEnded is called when one family of a dual-stack allocation
	// ends while the other lives on (its lifetime ran out, or a Refresh
	// deleted it): that relayed address is to be closed.
	FamilyEnded func(a *Allocation, f bindings.Families, addr netip.AddrPort)
	// Unreserved is called when a reservation token leaves unused (it
	// expired, or the allocation holding its port ended): its held port is
	// to be released.
	Unreserved func(r Reservation)
	// ConnExpired is called when an RFC 6062 peer connection saw no
	// ConnectionBind within ConnectionBindTimeout (RFC 6062 §5.3): the
	// peer connection is to be closed.
	ConnExpired func(a *Allocation, id uint32)
}

// New returns an empty table that admits allocations under l.
func New(l Limits, h Hooks) *Table {
	t := &Table{
		byTuple:     make(map[netaddr.FiveTuple]*Allocation),
		byRelay:     make(map[netip.AddrPort]*Allocation),
		byConn:      make(map[uint32]*Allocation),
		perUser:     make(map[string]int),
		tokens:      make(map[[8]byte]*reservation),
		userTokens:  make(map[string]int),
		changed:     make(chan struct{}, 1),
		rescheduled: make(chan struct{}, 1),
		hooks:       h,
		random:      func(b []byte) { _, _ = rand.Read(b) }, // crypto/rand never fails
	}
	t.SetLimits(l)
	t.admitting.Store(true)
	return t
}

// SetLimits replaces the quotas; live allocations are never revoked by it.
func (t *Table) SetLimits(l Limits) { t.limits.Store(&l) }

// Admitting reports whether the table takes new allocations.
func (t *Table) Admitting() bool { return t.admitting.Load() }

// StopAdmitting makes every later Admit fail with ErrNotAdmitting and
// returns Count at that instant, in one critical section: an Allocate
// admitted an instant before holds a ticket and is in the count, so a
// drain that starts from it waits for it.
func (t *Table) StopAdmitting() (live int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.admitting.Store(false)
	return t.counted()
}

// Count returns the allocations live, plus those admitted and not yet
// inserted or cancelled, plus those ended whose Ended hook has not
// returned: a drain that sees 0 stops the process only once every relay
// is closed and every usage record written.
func (t *Table) Count() int { return int(t.count.Load()) }

func (t *Table) counted() int { return len(t.byTuple) + t.admitted + t.ending }

// Changed delivers a coalesced notification after every change of Count.
// It is meant for a single watcher (the drain).
func (t *Table) Changed() <-chan struct{} { return t.changed }

// recount publishes Count and wakes the watcher, never blocking; t.mu is held.
func (t *Table) recount() {
	t.count.Store(int64(t.counted()))
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// Get returns the allocation of a 5-tuple.
func (t *Table) Get(tp netaddr.FiveTuple) (*Allocation, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.byTuple[tp]
	return a, ok
}

// ByRelayed returns the allocation one of whose relayed addresses is addr
// (unmapped, as the relay advertises it).
func (t *Table) ByRelayed(addr netip.AddrPort) (*Allocation, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.byRelay[netaddr.Unmap(addr)]
	return a, ok
}

// UserCount returns how many allocations user holds, live or admitted.
func (t *Table) UserCount(user string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.perUser[user]
}

// ByTransport returns the live allocation count of each client transport.
func (t *Table) ByTransport() map[Transport]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[Transport]int, numTransports)
	for _, tr := range Transports() {
		out[tr] = t.byTransport[tr]
	}
	return out
}
