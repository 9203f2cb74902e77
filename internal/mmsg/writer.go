package mmsg

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Writer sends datagrams in batches. Not safe for concurrent use: one
// goroutine fills and flushes it.
type Writer struct {
	rc    syscall.RawConn
	v6    bool
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []sockaddr
	n     int

	from, sent, errno int
	dropped           int                   // since the last Flush returned
	send              func(fd uintptr) bool // bound once: a fresh closure per call would allocate
}

// NewWriter batches up to batch datagrams per system call on conn.
func NewWriter(conn UDPConn, batch int) (*Writer, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("batch writer: %w", err)
	}
	la, _ := conn.LocalAddr().(*net.UDPAddr)
	w := &Writer{
		rc: rc, v6: la != nil && la.IP.To4() == nil,
		hdrs: make([]unix.Mmsghdr, batch), iovs: make([]unix.Iovec, batch), names: make([]sockaddr, batch),
	}
	w.send = w.sendmmsg
	return w, nil
}

// Add queues b for to; b must stay untouched until Flush. When the batch is
// full it is flushed first.
//
// Hot path: no allocation.
func (w *Writer) Add(b []byte, to netip.AddrPort) error {
	if w.n == len(w.hdrs) {
		dropped, err := w.Flush()
		w.dropped += dropped
		if err != nil {
			return err
		}
	}
	i := w.n
	w.n++
	w.iovs[i].Base = unsafe.SliceData(b)
	w.iovs[i].SetLen(len(b))
	h := &w.hdrs[i].Hdr
	h.Namelen = putSockaddr(&w.names[i], to, w.v6)
	h.Name = (*byte)(unsafe.Pointer(&w.names[i]))
	h.Iov = &w.iovs[i]
	h.SetIovlen(1)
	h.Control, h.Controllen, h.Flags = nil, 0, 0
	return nil
}

// Pending reports how many datagrams wait for Flush.
func (w *Writer) Pending() int { return w.n }

// Flush sends every queued datagram and reports how many were dropped
// since the last Flush (Add flushes a full batch itself). Datagrams the
// kernel refuses (an unreachable destination, an error) are dropped, as a
// lone sendto would lose them; the error reports the first failure.
func (w *Writer) Flush() (dropped int, err error) {
	dropped, w.dropped = w.dropped, 0
	for w.from = 0; w.from < w.n; {
		w.sent, w.errno = 0, 0
		if werr := w.rc.Write(w.send); werr != nil {
			dropped += w.n - w.from
			w.n = 0
			return dropped, werr
		}
		if w.errno != 0 {
			if err == nil {
				err = fmt.Errorf("sendmmsg: %w", syscall.Errno(w.errno))
			}
			dropped++
			w.from++ // skip the datagram the kernel refused
			continue
		}
		w.from += w.sent
	}
	w.n = 0
	return dropped, err
}

// sendmmsg is the RawConn callback for w.hdrs[w.from:w.n]: false means
// "socket buffer full, wait".
func (w *Writer) sendmmsg(fd uintptr) bool {
	n, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&w.hdrs[w.from])),
		uintptr(w.n-w.from), unix.MSG_DONTWAIT, 0, 0)
	switch errno {
	case unix.EAGAIN, unix.EINTR:
		return false
	case 0:
		w.sent = int(n)
	default:
		w.errno = int(errno)
	}
	return true
}
