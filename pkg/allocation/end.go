package allocation

// EndReason is why an allocation ended, as its usage record says.
type EndReason uint8

// The reasons an allocation ends. The zero value is a live allocation.
const (
	EndReleased         EndReason = iota + 1 // the client's Refresh with lifetime 0
	EndExpired                               // its lifetime ran out without a refresh
	EndConnectionClosed                      // a TCP or TLS client's connection ended
	EndDisconnected                          // an operator ended it (Disconnect)
	EndDrainDeadline                         // force-closed when the drain deadline passed
	EndShutdown                              // force-closed as the server stopped
	EndMoved                                 // handed over to a successor process, which serves it on
)

// String returns the reason as usage records write it.
func (r EndReason) String() string {
	switch r {
	case EndReleased:
		return "released"
	case EndExpired:
		return "expired"
	case EndConnectionClosed:
		return "connection_closed"
	case EndDisconnected:
		return "disconnected"
	case EndDrainDeadline:
		return "drain_deadline"
	case EndShutdown:
		return "shutdown"
	case EndMoved:
		return "moved"
	}
	return ""
}

// End ends a for why and reports whether this call ended it: the first
// reason stands, and Hooks.Ended is called once, by the call that ended it.
func (t *Table) End(a *Allocation, why EndReason) bool {
	var after []func()
	t.mu.Lock()
	ok := t.end(a, why, &after)
	t.mu.Unlock()
	run(after)
	return ok
}

// EndWhere ends every live allocation match accepts, for why, and returns
// how many it ended. match runs under the table's lock: it must not call
// the table (read a's fixed fields).
func (t *Table) EndWhere(match func(*Allocation) bool, why EndReason) int {
	var after []func()
	n := 0
	t.mu.Lock()
	for _, a := range t.byTuple {
		if match(a) && t.end(a, why, &after) {
			n++
		}
	}
	t.mu.Unlock()
	run(after)
	return n
}

// end removes a from the table and queues the hooks its end calls; t.mu
// is held.
func (t *Table) end(a *Allocation, why EndReason, after *[]func()) bool {
	if a.t != t || a.ending != 0 {
		return false
	}
	a.ending = why
	delete(t.byTuple, a.Tuple)
	for i := range a.relayed {
		if r := &a.relayed[i]; r.addr.IsValid() {
			delete(t.byRelay, r.addr)
			t.unschedule(&r.item)
		}
	}
	for _, p := range a.perms {
		t.unschedule(&p.item)
	}
	for _, c := range a.chans {
		t.unschedule(&c.item)
	}
	for id, c := range a.conns {
		t.unschedule(&c.item)
		delete(t.byConn, id)
	}
	a.perms, a.chans, a.conns = nil, nil, nil
	a.Route.SetPermissions(nil)
	a.Route.SetChannels(nil)
	if r := a.held; r != nil {
		t.dropReservation(r, after)
	}
	t.unbook(a.book)
	if tr := a.book.tr; tr < numTransports {
		t.byTransport[tr]--
	}
	t.ending++
	t.recount()
	*after = append(*after, func() {
		defer t.ended()
		if h := t.hooks.Ended; h != nil {
			h(a, why)
		}
	})
	return true
}

// ended takes an allocation whose Ended hook returned (or panicked) out of
// Count.
func (t *Table) ended() {
	t.mu.Lock()
	t.ending--
	t.recount()
	t.mu.Unlock()
}

// run calls the hooks queued under the lock, after it.
func run(after []func()) {
	for _, f := range after {
		f()
	}
}
