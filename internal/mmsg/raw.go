package mmsg

import (
	"fmt"
	"io"
	"net/netip"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Raw reads and writes one socket (TCP or UDP) a call at a time with raw
// non-blocking system calls through the runtime's poller: a read or write
// that cannot proceed parks the goroutine as usual, and deadlines and Close
// work as for any net.Conn; but no call enters the scheduler's syscall
// state (see SendTo for why that matters on a busy relay).
type Raw struct {
	rc syscall.RawConn
	fd int // the descriptor, for TryRead; valid while the socket is open

	// One reader at a time: the parameters and results of the bound
	// callbacks below (a closure per call would allocate).
	rbuf  []byte
	rn    int
	rfrom sockaddr
	rerr  syscall.Errno
	read  func(fd uintptr) bool
	recv  func(fd uintptr) bool

	wmu   sync.Mutex // serialises writers; each writes its whole buffer
	wbuf  []byte
	werr  syscall.Errno
	write func(fd uintptr) bool
	try   func(fd uintptr) bool

	// TryWritev's message, under wmu: kept so that no call allocates.
	iov   []unix.Iovec
	msg   unix.Msghdr
	vsent int
	tryv  func(fd uintptr) bool
}

// NewRaw wraps conn (a TCP or UDP socket).
func NewRaw(conn syscall.Conn) (*Raw, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("raw socket: %w", err)
	}
	r := &Raw{rc: rc, fd: -1}
	if err := rc.Control(func(fd uintptr) { r.fd = int(fd) }); err != nil {
		return nil, fmt.Errorf("raw socket: %w", err)
	}
	r.read, r.recv, r.write, r.try, r.tryv = r.readFD, r.recvFD, r.writeFD, r.tryFD, r.tryvFD
	return r, nil
}

// Fd is the socket's descriptor. It names this socket only while the socket
// is open: whoever watches it must stop before the socket closes.
func (r *Raw) Fd() int { return r.fd }

// TryRead is one non-blocking read(2) on a stream socket, for a loop that
// learnt from its own epoll set that the socket is readable: (0, nil) when
// nothing waits after all, io.EOF once the peer has closed it. It must not
// run after the socket is closed (the descriptor may belong to another by
// then), nor concurrently with Read.
//
// Hot path: no allocation.
func (r *Raw) TryRead(p []byte) (int, error) {
	for {
		n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(r.fd), uintptr(bufPtr(p)), uintptr(len(p)))
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return 0, nil
		case errno != 0:
			return 0, fmt.Errorf("read: %w", errno)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return int(n), nil
	}
}

// Read is read(2) on a stream socket: io.EOF once the peer has closed it.
// Not safe for concurrent use with itself or RecvFrom.
//
// Hot path: no allocation.
func (r *Raw) Read(p []byte) (int, error) {
	r.rbuf, r.rn, r.rerr = p, 0, 0
	err := r.rc.Read(r.read)
	r.rbuf = nil
	switch {
	case err != nil:
		return 0, err
	case r.rerr != 0:
		return 0, fmt.Errorf("read: %w", r.rerr)
	case r.rn == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return r.rn, nil
}

// RecvFrom is recvfrom(2) on a datagram socket. n is the datagram's real
// length (MSG_TRUNC): more than len(p) means it did not fit, and p holds
// only its first len(p) bytes. Not safe for concurrent use with itself or
// Read.
//
// Hot path: no allocation.
func (r *Raw) RecvFrom(p []byte) (int, netip.AddrPort, error) {
	r.rbuf, r.rn, r.rerr = p, 0, 0
	err := r.rc.Read(r.recv)
	r.rbuf = nil
	switch {
	case err != nil:
		return 0, netip.AddrPort{}, err
	case r.rerr != 0:
		return 0, netip.AddrPort{}, fmt.Errorf("recvfrom: %w", r.rerr)
	}
	return r.rn, addrPort(&r.rfrom), nil
}

// Write writes all of p to a stream socket, waiting for room as needed.
// Safe for concurrent use: writers take turns, each writing its whole
// buffer, so messages on a stream never interleave.
//
// Hot path: no allocation.
func (r *Raw) Write(p []byte) (int, error) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	r.wbuf, r.werr = p, 0
	err := r.rc.Write(r.write)
	left := len(r.wbuf)
	r.wbuf = nil
	switch {
	case err != nil:
		return len(p) - left, err
	case r.werr != 0:
		return len(p) - left, fmt.Errorf("write: %w", r.werr)
	}
	return len(p), nil
}

// TryWrite writes all of p to a stream socket now, or nothing: it reports
// false, without waiting, when another writer holds the socket or its send
// buffer has no room. When the kernel takes only part of p, the rest is
// written in the background (the socket's other writers wait for it), so
// messages never interleave and the caller never blocks.
//
// It is for a loop that serves many connections, where one slow client must
// not stall the others: a message it cannot place now is the caller's to
// drop.
//
// Hot path: no allocation, except for the rare remainder.
func (r *Raw) TryWrite(p []byte) bool {
	if !r.wmu.TryLock() {
		return false
	}
	r.wbuf, r.werr = p, 0
	err := r.rc.Write(r.try)
	left := r.wbuf
	r.wbuf = nil
	switch {
	case err != nil || r.werr != 0 || len(left) == len(p):
		r.wmu.Unlock()
		return false
	case len(left) == 0:
		r.wmu.Unlock()
		return true
	}
	r.finish(append([]byte(nil), left...))
	return true
}

// TryWritev is TryWrite for several messages, written back to back with one
// sendmsg(2): all of them now, or none. A loop that has several messages
// for one client at once saves a system call and a TCP segment for each
// but the first.
//
// Hot path: no allocation, except for the rare remainder (and the iovecs
// the first time a batch is this long).
func (r *Raw) TryWritev(msgs [][]byte) bool {
	if len(msgs) == 1 {
		return r.TryWrite(msgs[0])
	}
	if !r.wmu.TryLock() {
		return false
	}
	total := 0
	r.iov = r.iov[:0]
	for _, m := range msgs {
		if len(m) == 0 {
			continue
		}
		var v unix.Iovec
		v.Base = unsafe.SliceData(m)
		v.SetLen(len(m))
		r.iov = append(r.iov, v)
		total += len(m)
	}
	if total == 0 {
		r.wmu.Unlock()
		return true
	}
	r.msg.Iov = &r.iov[0]
	r.msg.SetIovlen(len(r.iov))
	r.vsent, r.werr = 0, 0
	err := r.rc.Write(r.tryv)
	sent := r.vsent
	clear(r.iov) // keep no pointers into the caller's buffers
	r.msg.Iov = nil
	switch {
	case err != nil || r.werr != 0 || sent == 0:
		r.wmu.Unlock()
		return false
	case sent == total:
		r.wmu.Unlock()
		return true
	}
	rest := make([]byte, 0, total-sent)
	for _, m := range msgs {
		if sent >= len(m) {
			sent -= len(m)
			continue
		}
		rest = append(rest, m[sent:]...)
		sent = 0
	}
	r.finish(rest)
	return true
}

// finish writes rest in the background for a TryWrite or TryWritev that the
// kernel took only part of; wmu is held and stays held until it is done.
func (r *Raw) finish(rest []byte) {
	go func() {
		defer r.wmu.Unlock() // held for the finisher: nobody may write in between
		r.wbuf = rest
		_ = r.rc.Write(r.write) // a broken connection ends through its reader
		r.wbuf = nil
	}()
}

// tryvFD makes one sendmsg(2) of the prepared message and never asks to wait.
func (r *Raw) tryvFD(fd uintptr) bool {
	for {
		n, _, errno := unix.RawSyscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&r.msg)),
			unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		switch errno {
		case 0:
			r.vsent = int(n)
		case unix.EINTR:
			continue
		case unix.EAGAIN:
		default:
			r.werr = errno
		}
		return true
	}
}

func (r *Raw) readFD(fd uintptr) bool {
	n, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(bufPtr(r.rbuf)), uintptr(len(r.rbuf)))
	return r.done(int(n), errno)
}

func (r *Raw) recvFD(fd uintptr) bool {
	salen := uint32(unsafe.Sizeof(r.rfrom))
	n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(bufPtr(r.rbuf)), uintptr(len(r.rbuf)),
		unix.MSG_DONTWAIT|unix.MSG_TRUNC, uintptr(unsafe.Pointer(&r.rfrom)), uintptr(unsafe.Pointer(&salen)))
	return r.done(int(n), errno)
}

// done records a read's outcome; false means "not ready: wait".
func (r *Raw) done(n int, errno syscall.Errno) bool {
	switch errno {
	case 0:
		r.rn = n
	case unix.EAGAIN, unix.EINTR:
		return false
	default:
		r.rerr = errno
	}
	return true
}

// writeFD writes what is left of wbuf; false means "buffer full: wait".
func (r *Raw) writeFD(fd uintptr) bool {
	r.sendAll(fd)
	return len(r.wbuf) == 0 || r.werr != 0
}

// tryFD writes what it can of wbuf and never asks to wait.
func (r *Raw) tryFD(fd uintptr) bool {
	r.sendAll(fd)
	return true
}

// sendAll sends wbuf until it is gone, the buffer is full or an error.
func (r *Raw) sendAll(fd uintptr) {
	for len(r.wbuf) > 0 {
		// send(2), not write(2): MSG_NOSIGNAL spares the process a SIGPIPE
		// when the peer has gone.
		n, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(bufPtr(r.wbuf)), uintptr(len(r.wbuf)),
			unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		switch errno {
		case 0:
			r.wbuf = r.wbuf[n:]
		case unix.EINTR:
		case unix.EAGAIN:
			return
		default:
			r.werr = errno
			return
		}
	}
}

func bufPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
