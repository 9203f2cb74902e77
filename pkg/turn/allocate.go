package turn

import (
	"errors"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/pkg/allocation"
)

// allocate serves an authenticated Allocate: RFC 8656 §7.2, in the order
// of docs/control-plane.md 2.5 (the step numbers are RFC 5766 §6.2's).
func (h *Handler) allocate(r *Request) {
	m, p := r.Msg, r.policy
	method := m.Type.Method.String()
	// A redeemed token's port is the handler's until the relay binds it:
	// a refusal after step 5 gives it back.
	giveBack := func() {}
	refuse := func(code stun.ErrorCode, reason string, extra ...stun.Setter) {
		giveBack()
		h.events.Refused(method, reason, r.User, r.From.Tuple.Client)
		h.fail(r, code, extra...)
	}

	// Step 2: "The server checks if the 5-tuple is currently in use by an
	// existing allocation. If yes, the server rejects the request with a
	// 437 (Allocation Mismatch) error" — unless it is the same request
	// again, whose success was lost (§7.2: a retransmission is answered
	// as the first time).
	if a := r.Alloc; a != nil {
		h.again(r, a)
		return
	}
	if h.asked(r) {
		return // the first transmission's answer answers this one too
	}
	// Step 8, taken early: "the server MAY choose to reject the request
	// with a 300 (Try Alternate) error if it wishes to redirect the client
	// to a different server" — turnd does while it does not admit, if it
	// knows where to.
	if alt, ok := h.alternate(r); ok {
		refuse(stun.CodeTryAlternate, RefusedRedirected, alternateAttrs(r, alt)...)
		return
	}
	// Step 7 counts allocations "based on the username"; turnd also counts
	// the user's Allocates per second, so that Allocate and Refresh(0) in
	// a loop cannot cost the server a CPU.
	if !h.allocates.Allow(r.User) {
		refuse(stun.CodeAllocQuotaReached, RefusedRate)
		return
	}
	// Steps 3 to 6 as far as the attributes decide them (allocateattrs.go).
	want, code := allocateAttrs(m, p, r.From.Stream != nil)
	if code == stun.CodeUnsupportedTransProto && want.tcp {
		refuse(code, RefusedTCPDisabled)
		return
	}
	if code != 0 {
		h.fail(r, code)
		return
	}
	w := bindings.Want{DontFragment: want.dontFragment, Even: want.even, Reserve: want.reserve, TCP: want.tcp, User: r.User}
	var fams familyAsk
	// Step 5: "it checks to see if the token is valid (i.e., the token is
	// in range and has not expired and the corresponding relayed transport
	// address is still available). If the token is not valid for some
	// reason, the server rejects the request with a 508 (Insufficient
	// Capacity) error." The token names the port, and its family.
	if want.token != nil {
		res, ok := h.table.TakeUserReservation(want.token, r.User, r.Now)
		if !ok {
			refuse(stun.CodeInsufficientCapacity, RefusedCapacity)
			return
		}
		w.Port, fams.want = res.Port, bindings.V4
		if res.V6 {
			fams.want = bindings.V6
		}
		giveBack = func() { h.relays.Unhold(res.Port, res.V6) }
	} else {
		// Families (docs/control-plane.md section 3, family.go).
		if fams, code = askedFamilies(m, p.Families); code != 0 {
			h.fail(r, code)
			return
		}
	}
	// Step 6: "If the server cannot satisfy the request [for EVEN-PORT],
	// then the server rejects the request with a 508"; a reservation past
	// the user's cap is step 7's quota, 486. R=1 reserves for the IPv4
	// address of a dual allocation (section 3).
	if want.reserve && h.table.ReservationCount(r.User) >= allocation.MaxReservationsPerUser {
		refuse(stun.CodeAllocQuotaReached, RefusedQuota)
		return
	}
	// An RFC 6062 relay has one family: a dual Allocate over TCP gets its
	// first and ADDRESS-ERROR-CODE 440 for the other (section 3).
	if want.tcp && fams.want == bindings.Both {
		fams.want, fams.lacking = bindings.V4, fams.lacking|bindings.V6
	}
	w.Families = fams.want
	if p.OverCapacity != nil && p.OverCapacity() {
		refuse(stun.CodeAllocQuotaReached, RefusedBandwidth)
		return
	}
	// Step 7: "At any point, the server MAY choose to reject the request
	// with a 486 (Allocation Quota Reached) error if it feels the client
	// is trying to exceed some locally defined allocation quota": the
	// table's quotas, booked in the same step as they are checked.
	ticket, err := h.table.Admit(r.User, r.From.Tuple.Client.Addr(), transportOf(r.From))
	switch {
	case errors.Is(err, allocation.ErrNotAdmitting):
		if alt, ok := h.alternate(r); ok { // the drain began since step 8
			refuse(stun.CodeTryAlternate, RefusedRedirected, alternateAttrs(r, alt)...)
			return
		}
		refuse(stun.CodeAllocQuotaReached, RefusedDraining)
		return
	case err != nil:
		refuse(stun.CodeAllocQuotaReached, RefusedQuota)
		return
	}
	h.admitted(r, ticket, w, fams, giveBack)
}

// open binds the relay sockets for an admitted Allocate and inserts the
// allocation: "the server [...] allocates a relayed transport address"
// (§7.2), or answers 508 with the ticket (and a redeemed token's port,
// through giveBack) given back. It reports whether it inserted one.
func (h *Handler) open(r *Request, ticket allocation.Ticket, w bindings.Want, fams familyAsk, giveBack func()) bool {
	route := &bindings.Route{Client: *r.From}
	relayed, err := h.relays.Open(route, w)
	if err == nil && !relayed.Addr[0].IsValid() && !relayed.Addr[1].IsValid() {
		err = firstRefusal(relayed)
	}
	if err != nil {
		ticket.Cancel()
		giveBack()
		code := stun.CodeInsufficientCapacity
		if errors.Is(err, bindings.ErrNoFamily) {
			code = stun.CodeAddrFamilyNotSupported
		}
		h.events.Refused(stun.MethodAllocate.String(), RefusedCapacity, r.User, r.From.Tuple.Client)
		h.fail(r, code)
		return false
	}
	lifetime, _ := requestedLifetime(r.Msg)
	lifetime = grant(lifetime, false, r.policy)
	a := &allocation.Allocation{
		Tuple: r.From.Tuple, Transport: transportOf(r.From), User: r.User, Username: r.Username, Realm: r.Realm,
		TxID: r.Msg.TransactionID, Route: route, DontFragment: w.DontFragment, PeerTCP: w.TCP,
	}
	if err := ticket.Insert(a, relayed.Addr, lifetime, r.Now); err != nil {
		// Another Allocate of this 5-tuple got in first (step 2 again).
		ticket.Cancel()
		h.relays.Close(route, w.Families)
		if relayed.Held != 0 {
			h.relays.Unhold(relayed.Held, heldV6(relayed))
		}
		if a, ok := h.table.Get(r.From.Tuple); ok {
			h.again(r, a) // a retransmission served alongside gets its success
			return false
		}
		h.fail(r, stun.CodeAllocMismatch)
		return false
	}
	var token []byte
	if w.Reserve && relayed.Held != 0 {
		v6 := heldV6(relayed)
		tok, err := h.table.Reserve(allocation.Reservation{Port: relayed.Held, V6: v6, User: r.User,
			Expires: r.Now.Add(allocation.ReservationLifetime), Holder: a.Tuple})
		if err != nil {
			h.relays.Unhold(relayed.Held, v6) // raced past the cap: the pair without its token
		} else {
			token = tok[:]
		}
	}
	if s := r.From.Stream; s != nil {
		s.Idle(false)
	}
	h.events.Created(a)
	h.allocated(r, a, lifetime, token, addressErrors(fams, relayed))
	return true
}

// again answers an Allocate on a 5-tuple that has allocation a: the same
// success when it is a's Allocate again (same transaction, same user), its
// first answer lost, else 437 (§7.2 step 2).
func (h *Handler) again(r *Request, a *allocation.Allocation) {
	if a.TxID != r.Msg.TransactionID || a.User != r.User {
		h.fail(r, stun.CodeAllocMismatch)
		return
	}
	var token []byte // the first success's, while it is not redeemed
	if res, ok := a.Held(); ok {
		token = res.Token[:]
	}
	h.allocated(r, a, 0, token, ask(r.Msg, a, r.policy.Families))
}

// allocated answers an Allocate with its success: "An XOR-RELAYED-ADDRESS
// attribute containing the relayed transport address [IPv4 first, then
// IPv6]. A LIFETIME attribute containing the current value of the
// time-to-expiry timer. A RESERVATION-TOKEN attribute (if a second
// relayed transport address was reserved). An XOR-MAPPED-ADDRESS attribute
// containing the client's IP address and port" (§7.2), and
// ADDRESS-ERROR-CODE for a family of a dual allocation it could not have.
// A retransmission (lifetime 0) is told the time left, rounded up so it
// reads as granted.
func (h *Handler) allocated(r *Request, a *allocation.Allocation, lifetime time.Duration, token []byte, errs []stun.Setter) {
	attrs := make([]stun.Setter, 0, 6)
	for _, f := range []bindings.Families{bindings.V4, bindings.V6} {
		if addr, ok := a.Relayed(f); ok {
			attrs = append(attrs, xorAddress{stun.AttrXORRelayedAddress, addr})
			if lifetime == 0 {
				// Never negative: the deadline may have passed an instant
				// before Expire gets to it.
				lifetime = max(0, (a.Expires(f).Sub(r.Now) + time.Second - 1).Truncate(time.Second))
			}
		}
	}
	attrs = append(attrs, lifetimeAttr(lifetime), xorAddress{stun.AttrXORMappedAddress, r.From.Tuple.Client})
	if token != nil {
		attrs = append(attrs, stun.RawAttribute{Type: stun.AttrReservationToken, Value: token})
	}
	h.succeed(r, append(attrs, errs...)...)
}

// ask is the families a retransmitted Allocate's first answer reported
// as missing: those a dual request asked for that the allocation lacks,
// 440 when turnd serves no such family, else 508 (the relay had no port).
func ask(m *stun.Message, a *allocation.Allocation, served bindings.Families) []stun.Setter {
	fams, code := askedFamilies(m, bindings.Both)
	if code != 0 || fams.errorType == 0 {
		return nil
	}
	have := a.Families()
	var out []stun.Setter
	for _, f := range []bindings.Families{bindings.V4, bindings.V6} {
		switch {
		case have.Has(f):
		case served.Has(f) && !a.PeerTCP: // an RFC 6062 relay has one family: 440 for the other
			out = append(out, addressError{typ: fams.errorType, family: f, code: stun.CodeInsufficientCapacity})
		default:
			out = append(out, addressError{typ: fams.errorType, family: f, code: stun.CodeAddrFamilyNotSupported})
		}
	}
	return out
}

// addressErrors are the ADDRESS-ERROR-CODE attributes of a dual
// allocation's success: 440 for a family turnd has no relay address of,
// 440 or 508 for one the relay refused.
func addressErrors(fams familyAsk, relayed bindings.Relayed) []stun.Setter {
	if fams.errorType == 0 {
		return nil
	}
	var out []stun.Setter
	for _, f := range []bindings.Families{bindings.V4, bindings.V6} {
		switch {
		case fams.lacking.Has(f):
			out = append(out, addressError{typ: fams.errorType, family: f, code: stun.CodeAddrFamilyNotSupported})
		case fams.want.Has(f) && !relayed.Addr[f.Index()].IsValid():
			code := stun.CodeInsufficientCapacity
			if errors.Is(relayed.Refused[f.Index()], bindings.ErrNoFamily) {
				code = stun.CodeAddrFamilyNotSupported
			}
			out = append(out, addressError{typ: fams.errorType, family: f, code: code})
		}
	}
	return out
}

// heldV6 reports whether the port held for a reservation is an IPv6 one:
// R=1 reserves for the IPv4 address, or for the only one of an IPv6
// allocation, and the token must name that family for its redemption and
// its release.
func heldV6(relayed bindings.Relayed) bool { return !relayed.Addr[0].IsValid() }

// firstRefusal is why the relay opened no address at all.
func firstRefusal(relayed bindings.Relayed) error {
	for _, err := range relayed.Refused {
		if err != nil {
			return err
		}
	}
	return bindings.ErrNoPort
}

// transportOf is the allocation table's name for a client's transport.
func transportOf(c *bindings.Client) allocation.Transport {
	switch {
	case c.TLS:
		return allocation.TLS
	case c.Tuple.TCP:
		return allocation.TCP
	}
	return allocation.UDP
}
