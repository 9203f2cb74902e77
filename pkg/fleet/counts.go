package fleet

import "sync"

// counts is the truth of this node's share: how many allocations it holds
// for each user. Redis's fields for this node follow it through Admit, the
// queued deltas, and the absolute writes of a rebuild.
type counts struct {
	// books is read-held by whatever changes this node's fields in Redis
	// incrementally (Admit, the delta writer) and write-held by a rebuild,
	// whose absolute writes would otherwise overwrite a change in flight.
	books sync.RWMutex

	mu      sync.Mutex
	held    map[string]int  // user → live allocations here
	total   int             // sum of held
	pending map[string]int  // user → delta not yet written to Redis
	pendTot int             // total's delta not yet written
	touched map[string]bool // users whose field Redis may hold since the last rebuild
	dirty   bool            // Redis may disagree: rebuild at the next beat
}

func (n *counts) init() {
	n.held = map[string]int{}
	n.pending = map[string]int{}
	n.touched = map[string]bool{}
	n.dirty = true // the first beat writes this node's (empty) share
}

// add counts one more allocation of user; queued is 1 when Redis has not
// counted it yet (Hold) and 0 when it has (Admit).
func (n *counts) add(user string, queued int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.held[user]++
	n.total++
	n.touched[user] = true
	if queued != 0 {
		n.pending[user] += queued
		n.pendTot += queued
	}
}

func (n *counts) release(user string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.held[user] == 0 {
		return false
	}
	if n.held[user]--; n.held[user] == 0 {
		delete(n.held, user)
	}
	n.total--
	n.pending[user]--
	n.pendTot--
	return true
}

func (n *counts) markDirty() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dirty = true
}

// unknown says Redis may hold a count of user's for this node that the
// books do not (an Admit whose script may have run): the rebuild writes
// the user's true count.
func (n *counts) unknown(user string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.touched[user] = true
	n.dirty = true
}

func (n *counts) isDirty() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dirty
}

// takeDeltas returns and clears the queued deltas; the caller read-holds
// books, so no rebuild's snapshot can fall between taking and writing.
func (n *counts) takeDeltas() (users map[string]int, total int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	users, total = n.pending, n.pendTot
	n.pending, n.pendTot = map[string]int{}, 0
	return users, total
}

// heldUsers lists the users with allocations here (their keys' TTLs are
// renewed by every beat).
func (n *counts) heldUsers() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	users := make([]string, 0, len(n.held))
	for u := range n.held {
		users = append(users, u)
	}
	return users
}

// snapshot returns the counts a rebuild writes: every user held here or
// touched since the last rebuild (whose field may linger at 0), and the
// total. It clears the queued deltas, which the absolute counts include;
// the caller write-holds books, so no Admit is in flight.
func (n *counts) snapshot() (users []string, held []int, total int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for u := range n.touched {
		users = append(users, u)
		held = append(held, n.held[u])
	}
	for u, h := range n.held {
		if !n.touched[u] {
			users = append(users, u)
			held = append(held, h)
		}
	}
	n.pending, n.pendTot = map[string]int{}, 0
	n.dirty = false
	return users, held, n.total
}

// rebuilt forgets the users a rebuild wrote as 0 unless they changed since.
func (n *counts) rebuilt(users []string, held []int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, u := range users {
		if held[i] == 0 && n.held[u] == 0 && n.pending[u] == 0 {
			delete(n.touched, u)
		}
	}
}
