package gate

import (
	"slices"
	"sync"
	"time"
)

// maxReservations bounds the group's token table. Past it the oldest token
// is evicted; expired tokens are swept first. Emptying the table instead
// would let a burst of reservations wipe every other client's live tokens.
const maxReservations = 4096

// maxReservationsPerUser caps the live tokens one user holds. A token keeps
// a port bound for up to 30 s; coturn's uclient holds at most one per
// client pair at a time, and browsers never ask for one.
const maxReservationsPerUser = 8

type reservation struct {
	port    int
	expires time.Time
	user    string
}

// issued is a token in the order tokens were put: with one lifetime for
// all, that is also the order they expire in.
type issued struct {
	token   string
	expires time.Time
}

// reservationTable maps RESERVATION-TOKENs to ports for the whole socket
// group. A token leaves when it is used, when it expires, or, the table
// being full, oldest first. Safe for concurrent use.
type reservationTable struct {
	mu      sync.Mutex
	m       map[string]reservation
	order   []issued // may still list tokens already gone; see live
	perUser map[string]int
}

func (t *reservationTable) put(token string, r reservation, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]reservation)
		t.perUser = make(map[string]int)
	}
	t.sweep(now)
	if old, ok := t.m[token]; ok {
		t.drop(token, old)
	}
	for len(t.m) >= maxReservations {
		t.evictOldest()
	}
	t.m[token] = r
	t.perUser[r.user]++
	t.order = append(t.order, issued{token, r.expires})
	if len(t.order) > 2*maxReservations {
		// Used tokens linger in order until they reach its front.
		t.order = slices.DeleteFunc(t.order, func(e issued) bool { return !t.live(e) })
	}
}

// take resolves a token (once); an expired one is gone.
func (t *reservationTable) take(token string, now time.Time) (reservation, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.m[token]
	if !ok {
		return r, false
	}
	t.drop(token, r)
	return r, now.Before(r.expires)
}

// count returns how many live tokens user holds.
func (t *reservationTable) count(user string, now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(now)
	return t.perUser[user]
}

func (t *reservationTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// live reports whether an order entry still stands for its token.
func (t *reservationTable) live(e issued) bool {
	r, ok := t.m[e.token]
	return ok && r.expires.Equal(e.expires)
}

// sweep drops expired tokens from the front of order; t.mu is held.
func (t *reservationTable) sweep(now time.Time) {
	for len(t.order) > 0 {
		e := t.order[0]
		if t.live(e) {
			if now.Before(e.expires) {
				return
			}
			t.drop(e.token, t.m[e.token])
		}
		t.order = t.order[1:]
	}
}

// evictOldest drops the oldest live token; t.mu is held.
func (t *reservationTable) evictOldest() {
	for len(t.order) > 0 {
		e := t.order[0]
		t.order = t.order[1:]
		if t.live(e) {
			t.drop(e.token, t.m[e.token])
			return
		}
	}
}

// drop forgets token; t.mu is held.
func (t *reservationTable) drop(token string, r reservation) {
	delete(t.m, token)
	if n := t.perUser[r.user] - 1; n > 0 {
		t.perUser[r.user] = n
	} else {
		delete(t.perUser, r.user)
	}
}
