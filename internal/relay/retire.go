package relay

import "net"

// A late relay goroutine in pion/turn v5.1.3 deletes its allocation's
// successor; the code below keeps it from doing so.
//
// pion keys allocations by 5-tuple. When one is deleted (Refresh with
// lifetime 0, expiry), pion closes its relay socket, and pion's goroutine
// for that socket, woken from ReadFrom by the close, then calls
// Manager.DeleteAllocation(a.fiveTuple): with the key, not the allocation.
// If the client has meanwhile allocated again from the same address (a
// Refresh 0 then an Allocate on one socket, as an ICE restart may do), that
// lookup finds the new allocation and deletes it: the client's next request
// gets 437 and its relay is gone (test/e2e TestReallocateFromSameAddress).
//
// The key's source address is an object turnd made: the edge makes a
// fresh one for every message it hands pion (UDP: a new *net.UDPAddr per
// datagram; TCP and TLS: a copy per message from the connection's
// RemoteAddr), and pion keeps the Allocate request's in the allocation's
// 5-tuple and reports it to OnAllocationCreated, which gives it to
// AttachClient. Once pion has reported the allocation deleted (Deleted),
// pion's goroutine for the socket, before ReadFrom returns to it, sets that
// object's port to 0: the lookup that follows computes a key no allocation
// has (no client sends from port 0), and deletes nothing.
//
// The goroutine waits for the report, not just for the close, because pion
// reads the object while it reports: an expired allocation is deleted with
// a.fiveTuple itself, and OnAllocationDeleted gets its source address.
// A permission or channel timer of pion's that fired just as the
// allocation closed may still read the object for its own report; turnd's
// handlers of those reports do not use the client address.
//
// When pion closes allocations without deleting them (its Manager.Close,
// as the server stops), no report comes: the goroutine's lookup is then
// the deletion, and ReadFrom returns, with the key intact, once the
// relay closes.

// retireAfterReport records the object pion keyed c's allocation by; its
// goroutine for c retires it once pion reports the deletion.
func (c *Conn) retireAfterReport(client net.Addr) {
	switch client.(type) {
	case *net.UDPAddr, *net.TCPAddr:
		c.reported = make(chan struct{})
		c.keyedBy.Store(&client)
	}
}

// awaitingReport is called as c closes: c's allocation may be reported
// deleted from now on.
func (rl *Relay) awaitingReport(c *Conn) {
	if c.keyedBy.Load() == nil {
		return
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.retiring == nil { // the relay has closed
		return
	}
	if old := rl.retiring[c.key]; old != nil {
		// The port's previous socket closed, and its deletion was never
		// reported: let its goroutine go with its key intact, unguarded.
		close(old.reported)
	}
	rl.retiring[c.key] = c
}

// Deleted is pion reporting (OnAllocationDeleted) that the allocation whose
// relay was advertised as relayAddr is deleted; see retire.go. Call it
// last in the report: pion's goroutine for the relay socket then changes
// the allocation's client address object.
func (rl *Relay) Deleted(relayAddr net.Addr) {
	if k, ok := tcpKey(relayAddr); ok {
		rl.tcpDeleted(k)
		return
	}
	ua, ok := relayAddr.(*net.UDPAddr)
	if !ok {
		return
	}
	k := liveKey{v6: ua.IP.To4() == nil, port: ua.Port}
	rl.mu.Lock()
	c := rl.retiring[k]
	delete(rl.retiring, k)
	rl.mu.Unlock()
	if c != nil {
		close(c.reported)
	}
}

// retire runs on pion's goroutine for c once c is closed, before ReadFrom
// returns it an error: see the top of retire.go.
func (c *Conn) retire() {
	p := c.keyedBy.Load()
	if p == nil || c.cut.Load() {
		return // cut: no report comes first, pion's lookup is the deletion
	}
	select {
	case <-c.reported:
	case <-c.relay.closed:
		return // the server is stopping: pion's lookup is the deletion
	}
	switch a := (*p).(type) {
	case *net.UDPAddr:
		a.Port = 0
	case *net.TCPAddr:
		a.Port = 0
	}
}
