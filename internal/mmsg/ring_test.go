package mmsg

import (
	"net"
	"syscall"
	"testing"
)

func descriptor(t *testing.T, c *net.UDPConn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	if err := rc.Control(func(s uintptr) { fd = int(s) }); err != nil {
		t.Fatal(err)
	}
	return fd
}

// ringReaders are Ring's two ways in: recvmmsg, and recvfrom one datagram
// at a time (called until max or an empty socket).
var ringReaders = []struct {
	name string
	read func(r *Ring, fd, from, max int) (int, error)
}{
	{"recvmmsg", (*Ring).Recv},
	{"recvfrom", func(r *Ring, fd, from, max int) (int, error) {
		n := 0
		for ; n < max; n++ {
			ok, err := r.RecvOne(fd, from+n)
			if err != nil {
				return n, err
			}
			if !ok {
				break
			}
		}
		return n, nil
	}},
}

// TestRingSlotsAcrossSockets: datagrams of two sockets land in the slots
// asked for, keep their sources, and an oversized one is marked truncated —
// read either way.
func TestRingSlotsAcrossSockets(t *testing.T) {
	for _, rd := range ringReaders {
		t.Run(rd.name, func(t *testing.T) {
			src, a := pair(t, "udp4", "127.0.0.1")
			_, b := pair(t, "udp4", "127.0.0.1")
			r := NewRing(4, 16, 4) // 12 bytes of payload room per slot
			if n, err := rd.read(r, descriptor(t, a), 0, 2); n != 0 || err != nil {
				t.Fatalf("empty socket: %d datagrams, %v", n, err)
			}
			for _, m := range []struct {
				to   *net.UDPConn
				data string
			}{{a, "one"}, {a, "two"}, {b, "far too long for a slot"}} {
				if _, err := src.WriteTo([]byte(m.data), m.to.LocalAddr()); err != nil {
					t.Fatal(err)
				}
			}
			// The datagrams are on loopback already: sendto returns after delivery.
			if n, err := rd.read(r, descriptor(t, a), 0, 2); n != 2 || err != nil {
				t.Fatalf("socket a: %d datagrams, %v", n, err)
			}
			if n, err := rd.read(r, descriptor(t, b), 2, 2); n != 1 || err != nil {
				t.Fatalf("socket b: %d datagrams, %v", n, err)
			}
			srcAP := src.LocalAddr().(*net.UDPAddr).AddrPort()
			for i, want := range []string{"one", "two", "far too long"} {
				buf, n, from, truncated := r.Datagram(i)
				if got := string(buf[4 : 4+min(n, 12)]); got != want || from != srcAP || truncated != (i == 2) {
					t.Errorf("slot %d: %q from %v truncated=%v", i, got, from, truncated)
				}
			}
			if _, err := rd.read(r, -1, 0, 1); err != syscall.EBADF {
				t.Fatalf("bad descriptor: %v", err)
			}
		})
	}
}
