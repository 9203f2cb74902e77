package allocation

import (
	"time"

	"github.com/turnd/turnd/internal/netaddr"
)

// ReservationLifetime is how long a RESERVATION-TOKEN stays valid: RFC
// 8656 §7.2 leaves it to the server ("a short time"); RFC 5766 §6.2 said
// about 30 seconds, and pion/turn and coturn keep 30 s.
const ReservationLifetime = 30 * time.Second

// MaxReservationsPerUser caps the live tokens one user holds: a token
// keeps a port bound for ReservationLifetime, and coturn's uclient holds
// one per RTP/RTCP pair at a time.
const MaxReservationsPerUser = 8

// Reservation is a relay port held for a RESERVATION-TOKEN (RFC 8656
// §7.2, EVEN-PORT with R=1) for the whole socket group: the next
// Allocate presenting Token gets Port.
type Reservation struct {
	Token   [8]byte
	Port    int
	V6      bool
	User    string
	Expires time.Time
	// Holder is the 5-tuple of the allocation whose Allocate reserved the
	// port: the reservation ends with it.
	Holder netaddr.FiveTuple
}

// reservation is a token's entry.
type reservation struct {
	r      Reservation
	holder *Allocation
	item   *due
}

// Reserve books r (its Token drawn at random when zero) until r.Expires,
// held by the live allocation of r.Holder, and returns its token. A user
// holding MaxReservationsPerUser live tokens is ErrReservationQuota; an
// ended holder is ErrGone; a token in use is ErrTokenInUse.
func (t *Table) Reserve(r Reservation) ([8]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.byTuple[r.Holder]
	if !ok {
		return [8]byte{}, ErrGone
	}
	if t.userTokens[r.User] >= MaxReservationsPerUser {
		return [8]byte{}, ErrReservationQuota
	}
	if a.held != nil {
		return [8]byte{}, ErrTokenInUse
	}
	if r.Token == ([8]byte{}) {
		for {
			t.random(r.Token[:])
			if _, taken := t.tokens[r.Token]; !taken && r.Token != ([8]byte{}) {
				break
			}
		}
	} else if _, taken := t.tokens[r.Token]; taken {
		return [8]byte{}, ErrTokenInUse
	}
	t.putReservation(r, a)
	return r.Token, nil
}

// putReservation files r, held by a; t.mu is held.
func (t *Table) putReservation(r Reservation, a *Allocation) {
	e := &reservation{r: r, holder: a}
	t.tokens[r.Token] = e
	t.userTokens[r.User]++
	a.held = e
	t.schedule(&e.item, r.Expires, due{kind: dueReservation, entry: e})
}

// TakeReservation redeems token (once): the port it held is the caller's
// to open for a new allocation. An unknown, used or expired token is
// false.
func (t *Table) TakeReservation(token []byte, now time.Time) (Reservation, bool) {
	return t.takeReservation(token, func(string) bool { return true }, now)
}

// TakeUserReservation is TakeReservation for a token user reserved: one
// of another user's is false and stays valid for its own user, so that a
// token seen by someone else cannot take a user's partner port (RFC 8656
// §7.2 step 5: a token not valid "for some reason" is refused).
func (t *Table) TakeUserReservation(token []byte, user string, now time.Time) (Reservation, bool) {
	return t.takeReservation(token, func(u string) bool { return u == user }, now)
}

func (t *Table) takeReservation(token []byte, owner func(string) bool, now time.Time) (Reservation, bool) {
	var k [8]byte
	if len(token) != len(k) {
		return Reservation{}, false
	}
	copy(k[:], token)
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.tokens[k]
	if !ok || !now.Before(e.r.Expires) || !owner(e.r.User) {
		return Reservation{}, false
	}
	t.forgetReservation(e)
	return e.r, true
}

// ReservationCount returns how many live tokens user holds.
func (t *Table) ReservationCount(user string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.userTokens[user]
}

// dropReservation forgets an unused reservation and queues
// Hooks.Unreserved; t.mu is held.
func (t *Table) dropReservation(e *reservation, after *[]func()) {
	t.forgetReservation(e)
	if h := t.hooks.Unreserved; h != nil {
		r := e.r
		*after = append(*after, func() { h(r) })
	}
}

// forgetReservation removes e from the table; t.mu is held.
func (t *Table) forgetReservation(e *reservation) {
	delete(t.tokens, e.r.Token)
	if n := t.userTokens[e.r.User] - 1; n > 0 {
		t.userTokens[e.r.User] = n
	} else {
		delete(t.userTokens, e.r.User)
	}
	t.unschedule(&e.item)
	if e.holder != nil && e.holder.held == e {
		e.holder.held = nil
	}
}
