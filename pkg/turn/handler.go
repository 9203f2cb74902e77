package turn

import (
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/ratelimit"
	"github.com/turnd/turnd/pkg/allocation"
)

// Handler serves the control messages of every client of one server. Safe
// for concurrent use: each call of Serve works on its own Request.
type Handler struct {
	table      *allocation.Table
	relays     Relays
	policy     atomic.Pointer[Policy]
	nonces     *auth.Nonces
	unverified *ratelimit.Limiter // per client address: answers to the unauthenticated
	allocates  *ratelimit.Users   // per user: authenticated Allocates
	events     Events
	now        func() time.Time
	next       atomic.Uint32 // rotation through Policy.Alternates
	admission  Admission     // nil: the table's quotas alone
	asking     asking        // Allocates waiting for admission
}

// Options are what a Handler is built on and keeps across reloads.
type Options struct {
	// Table is the only home of the allocations. Required.
	Table *allocation.Table
	// Relays opens and closes relay sockets.
	Relays Relays
	// Nonces issues and checks the NONCE of every challenge. Required.
	Nonces *auth.Nonces
	// Events is told about refusals and drops; nil: nobody.
	Events Events
	// Now is the clock of every request (nil: time.Now).
	Now func() time.Time
	// Admission, if set, is asked about every Allocate the table admits.
	Admission Admission
}

// New returns a Handler applying p.
func New(o Options, p *Policy) *Handler {
	h := &Handler{table: o.Table, relays: o.Relays, nonces: o.Nonces, events: o.Events, now: o.Now, admission: o.Admission}
	if h.events == nil {
		h.events = nopEvents{}
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.unverified = ratelimit.New(0, h.now)
	h.allocates = ratelimit.NewUsers(0, h.now)
	h.SetPolicy(p)
	return h
}

// SetPolicy replaces the policy for requests served from now on (a reload).
func (h *Handler) SetPolicy(p *Policy) {
	h.unverified.SetRate(p.UnauthenticatedRate)
	h.allocates.SetRate(p.UserAllocateRate, p.UserAllocateBurst)
	h.policy.Store(p)
}
