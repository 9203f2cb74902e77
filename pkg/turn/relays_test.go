package turn_test

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"

	"github.com/turnd/turnd/internal/bindings"
)

// relays is a fake turn.Relays: addresses from 198.51.100.1 and
// 2001:db8::1, ports counting up from 50000 (even ones when asked), and a
// record of every call.
type relays struct {
	mu       sync.Mutex
	next     int
	refuse   [2]error // per family: the next Opens refuse it
	fail     error    // the next Opens fail whole
	opened   []bindings.Want
	closed   []string // "port families"
	unheld   []int
	connects []connectCall
	peers    map[uint32]*peerConn
	connErr  error  // Connect's own return
	onOpen   func() // called once, by the next Open, before it opens
}

type connectCall struct {
	peer netip.AddrPort
	id   uint32
	done func(error)
}

// peerConn is a fake RFC 6062 peer connection.
type peerConn struct {
	io.ReadWriter
	closed bool
}

func (p *peerConn) Close() error { p.closed = true; return nil }

func newRelays() *relays { return &relays{next: 50000, peers: make(map[uint32]*peerConn)} }

var (
	relay4 = netip.MustParseAddr("198.51.100.1")
	relay6 = netip.MustParseAddr("2001:db8::1")
)

func (r *relays) Open(_ *bindings.Route, w bindings.Want) (bindings.Relayed, error) {
	if f := r.onOpen; f != nil {
		r.onOpen = nil
		f()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opened = append(r.opened, w)
	if r.fail != nil {
		return bindings.Relayed{}, r.fail
	}
	var out bindings.Relayed
	port := r.next
	if w.Port != 0 {
		port = w.Port
	}
	r.next += 2
	for i, ip := range []netip.Addr{relay4, relay6} {
		f := bindings.V4
		if i == 1 {
			f = bindings.V6
		}
		switch {
		case !w.Families.Has(f):
		case r.refuse[i] != nil:
			out.Refused[i] = r.refuse[i]
		default:
			out.Addr[i] = netip.AddrPortFrom(ip, uint16(port)) //nolint:gosec
		}
	}
	if w.Reserve {
		out.Held = port + 1
	}
	return out, nil
}

func (r *relays) Close(rt *bindings.Route, f bindings.Families) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = append(r.closed, fmt.Sprint(rt.Client.Tuple.Client.Port(), " ", f))
}

func (r *relays) Unhold(port int, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unheld = append(r.unheld, port)
}

func (r *relays) Connect(_ *bindings.Route, peer netip.AddrPort, id uint32, done func(error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.connErr != nil {
		return r.connErr
	}
	r.connects = append(r.connects, connectCall{peer, id, done})
	r.peers[id] = &peerConn{}
	return nil
}

func (r *relays) TakePeer(_ *bindings.Route, id uint32) (io.ReadWriteCloser, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.peers[id]
	delete(r.peers, id)
	return p, ok
}

// lastConnect returns the last Connect the relay was asked to dial.
func (r *relays) lastConnect() (connectCall, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.connects) == 0 {
		return connectCall{}, errors.New("no Connect dialled")
	}
	return r.connects[len(r.connects)-1], nil
}
