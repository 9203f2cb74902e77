package mmsg

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Ring is a fixed set of datagram buffers that recvmmsg fills from raw,
// non-blocking descriptors the caller polls itself — one epoll set over many
// sockets, where a Reader per socket would cost a goroutine and a wake-up
// per datagram. Slots stay the caller's until it reads into them again, so
// it can queue replies that point into them (a Writer) and reuse the ring
// once those are flushed. Not safe for concurrent use.
type Ring struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []sockaddr
	bufs  [][]byte
	off   int
}

// NewRing makes slots buffers of size bytes; datagrams land at offset off,
// leaving room in front for a header the caller adds in place.
func NewRing(slots, size, off int) *Ring {
	r := &Ring{
		hdrs: make([]unix.Mmsghdr, slots), iovs: make([]unix.Iovec, slots),
		names: make([]sockaddr, slots), bufs: make([][]byte, slots), off: off,
	}
	for i := range r.bufs {
		r.bufs[i] = make([]byte, size)
	}
	return r
}

// Len returns the number of slots.
func (r *Ring) Len() int { return len(r.bufs) }

// Recv reads up to max datagrams waiting on fd into slots from, from+1, …
// without blocking, and returns how many it read (0 when none wait).
//
// Hot path: no allocation.
func (r *Ring) Recv(fd int, from, max int) (int, error) {
	for i := from; i < from+max; i++ {
		aim(&r.hdrs[i], &r.iovs[i], &r.names[i], r.bufs[i][r.off:])
	}
	n, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&r.hdrs[from])),
		uintptr(max), unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case 0:
		return int(n), nil
	case unix.EAGAIN, unix.EINTR:
		return 0, nil
	}
	return 0, syscall.Errno(errno)
}

// RecvOne reads one datagram waiting on fd into slot i with recvfrom,
// without blocking, and reports whether there was one. For a socket that
// holds a single datagram it is cheaper than Recv: recvmmsg goes on to a
// second, failing receive to learn that nothing more waits.
//
// Hot path: no allocation.
func (r *Ring) RecvOne(fd int, i int) (bool, error) {
	buf := r.bufs[i][r.off:]
	salen := uint32(unsafe.Sizeof(r.names[i]))
	// MSG_TRUNC: the datagram's real length even when it did not fit.
	n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
		unix.MSG_DONTWAIT|unix.MSG_TRUNC, uintptr(unsafe.Pointer(&r.names[i])), uintptr(unsafe.Pointer(&salen)))
	switch errno {
	case 0:
	case unix.EAGAIN, unix.EINTR:
		return false, nil
	default:
		return false, syscall.Errno(errno)
	}
	h := &r.hdrs[i]
	h.Hdr.Flags = 0
	if int(n) > len(buf) {
		n = uintptr(len(buf))
		h.Hdr.Flags = unix.MSG_TRUNC
	}
	h.Len = uint32(n)
	return true, nil
}

// Datagram returns slot i as the last Recv left it: the whole buffer (the
// payload is buf[off:off+n]; the rest is the caller's), the payload length,
// the source, and whether the datagram was cut to fit.
func (r *Ring) Datagram(i int) (buf []byte, n int, from netip.AddrPort, truncated bool) {
	return r.bufs[i], int(r.hdrs[i].Len), addrPort(&r.names[i]), r.hdrs[i].Hdr.Flags&unix.MSG_TRUNC != 0
}
