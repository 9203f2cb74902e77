package edge

import (
	"io"
	"net"
	"sync"
	"time"

	"github.com/turnd/turnd/internal/netaddr"
)

// streamTable remembers the live TCP/TLS client connections by 5-tuple, so
// that the server can give a new allocation's relay the connection to
// answer its client on. Entries come and go with connections, never per packet.
// Sockets admit one live connection per 5-tuple (streamConns.claim), so an
// entry is never replaced while its connection lives.
type streamTable struct {
	mu sync.Mutex
	m  map[netaddr.FiveTuple]*streamConn
}

func (t *streamTable) put(client, server net.Addr, c *streamConn) {
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[netaddr.FiveTuple]*streamConn)
	}
	t.m[netaddr.Of(client, server)] = c
	t.mu.Unlock()
}

// get returns the live connection of a 5-tuple.
func (t *streamTable) get(client, server net.Addr) (*streamConn, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.m[netaddr.Of(client, server)]
	return c, ok
}

func (t *streamTable) drop(client, server net.Addr, c *streamConn) {
	k := netaddr.Of(client, server)
	t.mu.Lock()
	if t.m[k] == c {
		delete(t.m, k)
	}
	t.mu.Unlock()
}

// Stream returns the connection of the TCP/TLS client at client that reached
// the listener at server, as a writer for the relay's downlink fast path.
// Writes are whole frames and safe for concurrent use (the connection's).
func (e *Edge) Stream(client, server net.Addr) (io.Writer, bool) {
	e.streams.mu.Lock()
	defer e.streams.mu.Unlock()
	c, ok := e.streams.m[netaddr.Of(client, server)]
	if !ok {
		return nil, false
	}
	if c.sock != nil {
		return c.sock, true // shares the connection's writer lock with pion's writes
	}
	return c.Conn, true
}

// Allocated tells the edge that the TCP/TLS client at client, on the
// listener at server, now holds an allocation: its connection is no longer
// idle and the idle timeout stops applying. r, if not nil, is the reactor
// that reads a plain TCP connection from now on (see Reactor); a TLS
// connection stays with its own goroutine.
func (e *Edge) Allocated(client, server net.Addr, r Reactor) {
	c, ok := e.streams.get(client, server)
	if !ok {
		return
	}
	c.idle.Lock()
	c.idleEpoch++ // a release timer armed before this finds the allocation
	c.idle.Unlock()
	_ = c.Conn.SetReadDeadline(time.Time{})
	if r != nil && c.sock != nil {
		// The first reactor stays: a later allocation on the same
		// connection (after the first was released) must not move a
		// connection its reactor may be watching; any loop can read it.
		c.reactor.CompareAndSwap(nil, &r)
	}
}

// Released tells the edge that the TCP/TLS client at client, on the
// listener at server, no longer holds an allocation (deleted or expired):
// the idle timeout applies again from now, or a client could keep an idle
// connection, goroutine and socket forever by allocating once. A timer
// rather than a read deadline: a plain TCP connection may be read by its
// reactor's raw reads, which deadlines do not reach.
func (e *Edge) Released(client, server net.Addr) {
	idle := e.gate.IdleTimeout()
	if idle <= 0 {
		return
	}
	c, ok := e.streams.get(client, server)
	if !ok {
		return
	}
	c.idle.Lock()
	defer c.idle.Unlock()
	c.idleEpoch++
	epoch := c.idleEpoch
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	c.idleTimer = time.AfterFunc(idle, func() {
		c.idle.Lock()
		still := c.idleEpoch == epoch
		c.idle.Unlock()
		if still {
			_ = c.Close()
		}
	})
}
