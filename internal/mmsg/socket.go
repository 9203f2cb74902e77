package mmsg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Socket is a non-blocking UDP socket that the Go runtime's poller does not
// hold. It is a net.PacketConn, a syscall.Conn (Reader, Writer and Raw serve it) and a descriptor
// (Ring and SendTo use it directly).
//
// Why not a *net.UDPConn: the runtime polls every socket it holds for
// EPOLLIN and EPOLLOUT, edge-triggered, and Linux wakes a UDP socket's wait
// queue with EPOLLOUT each time one of its datagrams has left (sock_wfree).
// A relay socket sends a datagram for every packet relayed to a peer and a
// client-facing socket one for every packet relayed to a client, and both
// are read elsewhere (a downlink loop's epoll set, a batch reader): the
// runtime's poller was woken for every packet, both ways, for a readiness
// nobody waited for, and for every datagram a downlink loop read as well —
// epoll callbacks, netpoll events and thread wake-ups (see
// docs/benchmarks.md for what it cost).
//
// A Socket is read through a private epoll set that holds it with EPOLLIN
// only, created on the first read; that set is what sits in the runtime's
// poller. A write that finds the send buffer full waits with
// poll(2), a bounded blocking call: rare on UDP, and it needs no standing
// registration.
type Socket struct {
	fd    int
	local *net.UDPAddr
	v6    bool

	mu     sync.RWMutex // read-held around every system call on fd; Close write-holds it
	closed bool
	wait   *os.File // the private epoll set, nil until the first read

	waitMu     sync.Mutex      // one reader at a time
	waitRC     syscall.RawConn // wait's
	readFn     func(fd uintptr) bool
	readClosed bool
	readStep   func(uintptr) bool // bound once: a method value per read would allocate

	deadlines sync.Mutex
	rdeadline time.Time
	wdeadline time.Time
}

// UDPConn is what Reader and Writer serve: a *net.UDPConn or a *Socket.
type UDPConn interface {
	syscall.Conn
	LocalAddr() net.Addr
}

var (
	_ net.PacketConn = (*Socket)(nil)
	_ UDPConn        = (*Socket)(nil)
	_ UDPConn        = (*net.UDPConn)(nil)
)

// ListenUDP binds a UDP socket like net.ListenConfig.ListenPacket (same
// address rules, same errors) with control applied before bind (nil:
// none), and takes it out of the runtime's poller (see Adopt).
func ListenUDP(network, address string, control func(network, address string, c syscall.RawConn) error) (*Socket, error) {
	lc := net.ListenConfig{Control: control}
	pc, err := lc.ListenPacket(context.Background(), network, address)
	if err != nil {
		return nil, err
	}
	return Adopt(pc.(*net.UDPConn))
}

// Adopt turns conn into a Socket and closes conn: the socket lives on in a
// duplicate descriptor, and closing conn's own descriptor takes it out of
// the runtime's poller (Go deletes a descriptor from its epoll set when it
// closes it). The duplicate shares the socket's non-blocking mode.
func Adopt(conn *net.UDPConn) (*Socket, error) {
	defer conn.Close()
	local, _ := conn.LocalAddr().(*net.UDPAddr)
	if local == nil {
		return nil, errors.New("adopt udp socket: no local address")
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("adopt udp socket: %w", err)
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, fmt.Errorf("adopt udp socket: %w", err)
	}
	if derr != nil {
		return nil, fmt.Errorf("adopt udp socket: %w", derr)
	}
	s := &Socket{fd: fd, local: local, v6: local.IP.To4() == nil}
	s.readStep = s.step
	return s, nil
}

// Fd returns the socket's descriptor. It stays valid until Close; a caller
// using it directly must not race Close (Conn in internal/relay guards it).
func (s *Socket) Fd() int { return s.fd }

// LocalAddr returns the bound address (a *net.UDPAddr).
func (s *Socket) LocalAddr() net.Addr { return s.local }

// SyscallConn gives Reader, Writer and Raw the socket: their calls run under
// the socket's lock, and their waits are the Socket's.
func (s *Socket) SyscallConn() (syscall.RawConn, error) { return (*socketConn)(s), nil }

// Close closes the socket once; a waiting reader returns net.ErrClosed.
func (s *Socket) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return net.ErrClosed
	}
	s.closed = true
	err := unix.Close(s.fd)
	wait := s.wait
	s.mu.Unlock()
	if wait != nil {
		_ = wait.Close() // wakes a parked reader
	}
	if err != nil {
		return fmt.Errorf("close udp socket: %w", err)
	}
	return nil
}

// ReadFrom reads one datagram (net.PacketConn). Not a hot path: it
// allocates the address.
func (s *Socket) ReadFrom(p []byte) (int, net.Addr, error) {
	n, from, err := s.ReadFromUDPAddrPort(p)
	if err != nil {
		return 0, nil, err
	}
	return n, net.UDPAddrFromAddrPort(from), nil
}

// ReadFromUDPAddrPort reads one datagram, waiting for one.
func (s *Socket) ReadFromUDPAddrPort(p []byte) (int, netip.AddrPort, error) {
	var (
		n     int
		from  sockaddr
		errno syscall.Errno
	)
	err := (*socketConn)(s).Read(func(fd uintptr) bool {
		salen := uint32(unsafe.Sizeof(from))
		r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(bufPtr(p)), uintptr(len(p)),
			unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&from)), uintptr(unsafe.Pointer(&salen)))
		if e == unix.EAGAIN || e == unix.EINTR {
			return false
		}
		n, errno = int(r), e
		return true
	})
	switch {
	case err != nil:
		return 0, netip.AddrPort{}, err
	case errno != 0:
		return 0, netip.AddrPort{}, &net.OpError{Op: "read", Net: "udp", Source: s.local, Err: os.NewSyscallError("recvfrom", errno)}
	}
	return n, addrPort(&from), nil
}

// WriteTo sends one datagram to addr, a *net.UDPAddr (net.PacketConn).
func (s *Socket) WriteTo(p []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok || ua == nil {
		return 0, &net.OpError{Op: "write", Net: "udp", Source: s.local, Addr: addr, Err: syscall.EINVAL}
	}
	return s.WriteToUDPAddrPort(p, ua.AddrPort())
}

// WriteToUDPAddrPort sends one datagram to to, waiting for room in the send
// buffer if it is full.
func (s *Socket) WriteToUDPAddrPort(p []byte, to netip.AddrPort) (int, error) {
	for {
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			return 0, net.ErrClosed
		}
		err := SendTo(s.fd, p, to, s.v6)
		s.mu.RUnlock()
		switch {
		case err == nil:
			return len(p), nil
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			if werr := s.waitWritable(); werr != nil {
				return 0, werr
			}
		default:
			return 0, &net.OpError{Op: "write", Net: "udp", Source: s.local, Addr: net.UDPAddrFromAddrPort(to), Err: os.NewSyscallError("sendto", err)}
		}
	}
}

// SetDeadline sets the read and write deadlines.
func (s *Socket) SetDeadline(t time.Time) error {
	if err := s.SetReadDeadline(t); err != nil {
		return err
	}
	return s.SetWriteDeadline(t)
}

// SetReadDeadline bounds waits for reading (the zero time: none).
func (s *Socket) SetReadDeadline(t time.Time) error {
	s.deadlines.Lock()
	s.rdeadline = t
	s.deadlines.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return net.ErrClosed
	}
	if s.wait != nil {
		return s.wait.SetReadDeadline(t)
	}
	return nil
}

// SetWriteDeadline bounds waits for room to write (the zero time: none).
func (s *Socket) SetWriteDeadline(t time.Time) error {
	s.deadlines.Lock()
	s.wdeadline = t
	s.deadlines.Unlock()
	return nil
}

// step is the wait set's read callback: it runs the reader's call on the
// socket. The call must happen inside the wait set's RawConn.Read, after
// the runtime has reset the set's readiness: a datagram that arrives after
// a failed call then always wakes the wait, where one that arrived between
// a call outside and the wait would be forgotten with the reset.
func (s *Socket) step(uintptr) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.readClosed = true
		return true
	}
	return s.readFn(uintptr(s.fd))
}

// openWait creates the private epoll set (caller holds waitMu).
func (s *Socket) openWait() error {
	efd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("udp socket wait set: %w", err)
	}
	if err := unix.SetNonblock(efd, true); err != nil {
		_ = unix.Close(efd)
		return fmt.Errorf("udp socket wait set: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = unix.Close(efd)
		return net.ErrClosed
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(s.fd)}
	if err := unix.EpollCtl(efd, unix.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
		s.mu.Unlock()
		_ = unix.Close(efd)
		return fmt.Errorf("udp socket wait set: %w", err)
	}
	s.wait = os.NewFile(uintptr(efd), "udp-socket-wait")
	s.mu.Unlock()
	rc, err := s.wait.SyscallConn()
	if err != nil {
		return fmt.Errorf("udp socket wait set: %w", err)
	}
	s.deadlines.Lock()
	t := s.rdeadline
	s.deadlines.Unlock()
	if !t.IsZero() {
		_ = s.wait.SetReadDeadline(t)
	}
	s.waitRC = rc
	return nil
}

// writeWaitSlice bounds one poll(2) for room to write, so that a Close or
// a deadline is noticed while waiting.
const writeWaitSlice = 20 * time.Millisecond

// waitWritable waits for room in the send buffer, the write deadline or
// Close.
func (s *Socket) waitWritable() error {
	s.deadlines.Lock()
	deadline := s.wdeadline
	s.deadlines.Unlock()
	timeout := writeWaitSlice
	if !deadline.IsZero() {
		left := time.Until(deadline)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		timeout = min(timeout, left)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return net.ErrClosed
	}
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLOUT}}
	s.mu.RUnlock()
	// The descriptor may close (and be reused) during the poll: the next
	// write sees closed under the lock, so the worst is one early return.
	_, err := unix.Poll(fds, int(timeout.Milliseconds())+1)
	if err != nil && !errors.Is(err, unix.EINTR) {
		return fmt.Errorf("udp socket wait: %w", err)
	}
	return nil
}

// socketConn is a Socket's syscall.RawConn.
type socketConn Socket

func (c *socketConn) Control(f func(fd uintptr)) error {
	s := (*Socket)(c)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return net.ErrClosed
	}
	f(uintptr(s.fd))
	return nil
}

// Read calls f until it reports done, waiting for the socket to be readable
// in between (through the private wait set, see step), until the read
// deadline passes or the socket closes.
func (c *socketConn) Read(f func(fd uintptr) bool) error {
	s := (*Socket)(c)
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	if s.waitRC == nil {
		if err := s.openWait(); err != nil {
			if s.isClosed() {
				return net.ErrClosed // closed while the set was made
			}
			return err
		}
	}
	s.readFn, s.readClosed = f, false
	err := s.waitRC.Read(s.readStep)
	s.readFn = nil
	if s.readClosed {
		return net.ErrClosed
	}
	if err != nil {
		if s.isClosed() {
			return net.ErrClosed
		}
		return err // os.ErrDeadlineExceeded
	}
	return nil
}

func (s *Socket) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// Write calls f until it reports done, waiting for room to write in between.
func (c *socketConn) Write(f func(fd uintptr) bool) error {
	s := (*Socket)(c)
	for {
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			return net.ErrClosed
		}
		done := f(uintptr(s.fd))
		s.mu.RUnlock()
		if done {
			return nil
		}
		if err := s.waitWritable(); err != nil {
			return err
		}
	}
}
