package edge

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/wire"
)

// readBatch is how many datagrams one recvmmsg may bring in: under load the
// socket's queue is drained with one system call per batch instead of one
// per datagram. readBuffer holds the largest datagram a client may send
// (a full-size Ethernet frame's payload and then some).
const (
	readBatch  = 32
	readBuffer = 2048
)

// lane is one UDP socket of a group, read by ServeUDP.
type lane struct {
	e    *Edge
	sock *mmsg.Socket
	fast FastPath
	h    Handler
	// client is handed to the handler for every datagram, refilled each
	// time: a value per datagram would be an allocation per request.
	client bindings.Client
}

// ServeUDP reads one socket of a UDP group until Stop or the socket's end:
// each datagram of a recvmmsg batch goes to fast first (nil: none), and a
// STUN message it does not take to h, inline, with a Client whose Lane is
// this socket. A ChannelData the fast path does not take is dropped (RFC
// 8656 §12.4: no channel bound). Pause parks it between batches. It
// returns nil after Stop, or once Release moved its socket; any other end
// is returned and reported through Failed.
func (e *Edge) ServeUDP(sock *mmsg.Socket, fast FastPath, h Handler) error {
	batch, err := mmsg.NewReader(sock, readBatch, readBuffer, 0)
	if err != nil {
		err = fmt.Errorf("serve udp %s: %w", sock.LocalAddr(), err)
		e.fail(err)
		return err
	}
	if !e.addLane(sock) {
		return nil
	}
	defer e.dropLane(sock)
	e.own.mu.Lock()
	st := e.own.lanes[sock]
	e.own.mu.Unlock()
	l := &lane{e: e, sock: sock, fast: fast, h: h}
	l.client = bindings.Client{Tuple: netaddr.FiveTuple{Server: netaddr.AddrPort(sock.LocalAddr())}, Lane: sock}
	for {
		buf, n, from, err := batch.Next()
		if e.own.halted.Load() {
			return nil // the rest of the batch is left unserved, as Stop promises
		}
		if err != nil {
			if e.stopping() {
				return nil
			}
			// Pause's deadline: the batch in hand is served (Next only
			// reads again once it is), so the lane parks between batches.
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if e.parkLane(st) {
					return nil
				}
				continue
			}
			err = fmt.Errorf("read udp %s: %w", sock.LocalAddr(), err)
			e.fail(err)
			return err
		}
		l.serve(buf[:n], from)
	}
}

// serve hands one datagram to the fast path, else to the handler. A panic
// in either drops that datagram and is reported; it never takes the
// socket's reader, and with it every other client of the socket, down.
//
// Hot path: one call per client datagram; no allocation.
func (l *lane) serve(pkt []byte, from netip.AddrPort) {
	defer func() {
		if r := recover(); r != nil {
			l.e.recovered(r)
		}
	}()
	if l.fast != nil && l.fast(pkt, from) {
		return
	}
	if !wire.IsSTUN(pkt) {
		return // ChannelData on no channel (RFC 8656 §12.4), or noise
	}
	l.client.Tuple.Client = from
	l.h(pkt, &l.client)
}
