package mmsg

import (
	"fmt"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reader receives datagrams in batches. Not safe for concurrent use: one
// read loop owns it.
type Reader struct {
	rc    syscall.RawConn
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []sockaddr
	bufs  [][]byte
	off   int // where in each buffer the datagram lands

	n, next int
	errno   syscall.Errno
	recv    func(fd uintptr) bool // bound once: a fresh closure per call would allocate
}

// NewReader reads up to batch datagrams per system call, each into a
// buffer of size bytes at offset off (room the caller may use in front of
// the payload, e.g. for a header).
func NewReader(conn UDPConn, batch, size, off int) (*Reader, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("batch reader: %w", err)
	}
	r := &Reader{
		rc: rc, hdrs: make([]unix.Mmsghdr, batch), iovs: make([]unix.Iovec, batch),
		names: make([]sockaddr, batch), bufs: make([][]byte, batch), off: off,
	}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, size)
	}
	r.recv = r.recvmmsg
	return r, nil
}

// Next returns the next datagram: its buffer (the payload is
// buf[off:off+n], the rest is the caller's to use until the next call), its
// length and its source. It blocks like a read, honouring the socket's
// deadline, and returns the socket's error once it is closed.
//
// Hot path: no allocation.
func (r *Reader) Next() (buf []byte, n int, from netip.AddrPort, err error) {
	if r.next == r.n {
		if err := r.fill(); err != nil {
			return nil, 0, netip.AddrPort{}, err
		}
	}
	i := r.next
	r.next++
	return r.bufs[i], int(r.hdrs[i].Len), addrPort(&r.names[i]), nil
}

func (r *Reader) fill() error {
	r.n, r.next = 0, 0
	for i := range r.hdrs {
		aim(&r.hdrs[i], &r.iovs[i], &r.names[i], r.bufs[i][r.off:])
	}
	if err := r.rc.Read(r.recv); err != nil {
		return err
	}
	if r.errno != 0 {
		return fmt.Errorf("recvmmsg: %w", r.errno)
	}
	return nil
}

// recvmmsg is the RawConn callback: false means "not ready, wait".
func (r *Reader) recvmmsg(fd uintptr) bool {
	n, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])),
		uintptr(len(r.hdrs)), unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case unix.EAGAIN:
		return false
	case unix.EINTR:
		return false
	case 0:
		r.n, r.errno = int(n), 0
	default:
		r.n, r.errno = 0, errno
	}
	return true
}

// aim readies one message header of a receive batch: the datagram lands in
// buf, its source in name.
func aim(h *unix.Mmsghdr, iov *unix.Iovec, name *sockaddr, buf []byte) {
	iov.Base = &buf[0]
	iov.SetLen(len(buf))
	h.Hdr.Name = (*byte)(unsafe.Pointer(name))
	h.Hdr.Namelen = uint32(unsafe.Sizeof(*name))
	h.Hdr.Iov = iov
	h.Hdr.SetIovlen(1)
	h.Hdr.Control, h.Hdr.Controllen, h.Hdr.Flags = nil, 0, 0
}
