package main

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/pion/stun/v4"
)

// firstChannel is the channel every session binds. Channel numbers are per
// allocation, so all sessions can use the same one.
const firstChannel = 0x4000

// clientSocketBuffer is SO_RCVBUF/SO_SNDBUF of a relay client socket: big
// enough that a burst of echoes is not dropped by turnload itself, which
// would be counted against the server.
const clientSocketBuffer = 1 << 20

// session is one client: its own UDP socket, connected to the server, and
// the allocation made through it. One socket per allocation is not a choice:
// a server keys allocations by the client's 5-tuple, so SO_REUSEPORT sockets
// sharing one local port would all be the same client. A connected socket
// also spares the kernel a route lookup per datagram.
type session struct {
	idx     int
	conn    *net.UDPConn
	ctl     *control
	relayed *net.UDPAddr
}

// dialSession opens a client socket to the server; big buffers only when
// the session will carry data.
func dialSession(idx int, o *options, bigBuffers bool) (*session, error) {
	conn, err := net.DialUDP("udp", nil, o.server)
	if err != nil {
		return nil, fmt.Errorf("open client socket: %w", err)
	}
	if bigBuffers {
		// Best effort: the kernel caps these at net.core.[rw]mem_max.
		_ = conn.SetReadBuffer(clientSocketBuffer)
		_ = conn.SetWriteBuffer(clientSocketBuffer)
	}
	return &session{idx: idx, conn: conn, ctl: newControl(conn, o)}, nil
}

// allocate makes a UDP allocation (the 401 round included).
func (s *session) allocate(life time.Duration) error {
	res, err := s.ctl.request(stun.MethodAllocate, requestedTransportUDP(), lifetime(life))
	if err != nil {
		return err
	}
	if s.relayed, err = relayedAddress(res); err != nil {
		return fmt.Errorf("read relayed address: %w", errors.Join(errMalformed, err))
	}
	return nil
}

// permit installs a permission for the peer's IP.
func (s *session) permit(peer *net.UDPAddr) error {
	_, err := s.ctl.request(stun.MethodCreatePermission, xorPeerAddress{peer})
	return err
}

// bind binds firstChannel to the peer (which also installs or refreshes the
// permission, RFC 8656 §12.1).
func (s *session) bind(peer *net.UDPAddr) error {
	_, err := s.ctl.request(stun.MethodChannelBind, channelNumber(firstChannel), xorPeerAddress{peer})
	return err
}

// refresh extends the allocation.
func (s *session) refresh(life time.Duration) error {
	_, err := s.ctl.request(stun.MethodRefresh, lifetime(life))
	return err
}

// release deletes the allocation with a Refresh of lifetime 0. A 437 means
// it is already gone, which is what release wants.
func (s *session) release() error {
	_, err := s.ctl.request(stun.MethodRefresh, lifetime(0))
	var re *responseError
	if errors.As(err, &re) && re.code == stun.CodeAllocMismatch {
		return nil
	}
	return err
}

func (s *session) close() { _ = s.conn.Close() }
