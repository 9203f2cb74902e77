package e2e

import (
	"net"
	"strconv"
	"syscall"
	"testing"

	"github.com/pion/stun/v4"
	"golang.org/x/sys/unix"
)

// TestKernelLeavesTTLAndOptionsToUserSpace: datagrams the kernel path must
// not rewrite go up to user space, which relays them: those with a TTL or
// hop limit of 1 (forwarding them would need an ICMP error the program
// does not send) and IPv4 datagrams with IP options, from either end.
// Each is counted by the kernel path or not, one at a time, after the
// channel has gone through the kernel.
func TestKernelLeavesTTLAndOptionsToUserSpace(t *testing.T) {
	k := newKernelNet(t)
	srv := k.start(t, kernelConfig(t), "tc")
	for _, tc := range []struct {
		name, client, server, peer string
		extra                      []stun.Setter
		opts                       []sockopt // each applied alone, then undone
	}{
		{"v4", kClient4, kServer4, kPeer4, nil, []sockopt{
			{"ttl 1", unix.IPPROTO_IP, unix.IP_TTL, 1, 64, nil},
			{"ip options", unix.IPPROTO_IP, unix.IP_OPTIONS, 0, 0, ipOptions},
		}},
		{"v6", kClient6, kServer6, kPeer6, []stun.Setter{family6}, []sockopt{
			{"hop limit 1", unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, 1, -1, nil},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := k.listenPeer(t, tc.peer)
			ch := k.openChannel(t, tc.client, net.JoinHostPort(tc.server, strconv.Itoa(kTURNPort)), peer, tc.extra...)
			ch.throughKernel(t, srv, payloads("warm", 10))
			for _, o := range tc.opts {
				for _, end := range []struct {
					name string
					conn syscall.Conn
					dir  func(kernelCount) float64
				}{
					{"from the client", ch.c.Conn().(syscall.Conn), func(c kernelCount) float64 { return c.toPeer }},
					{"from the peer", ch.peer.conn, func(c kernelCount) float64 { return c.toClient }},
				} {
					before := srv.kernel(t)
					o.set(t, end.conn, true)
					ch.relayBoth(t, []string{o.name + " " + end.name})
					o.set(t, end.conn, false)
					if d := end.dir(srv.kernel(t)) - end.dir(before); d != 0 {
						t.Errorf("a datagram with %s %s: the kernel path relayed %v, want it left to user space", o.name, end.name, d)
					}
				}
			}
		})
	}
}

// ipOptions is four bytes of IPv4 options: three no-operations and the
// end of the list (RFC 791), the least a header with options can carry.
var ipOptions = []byte{1, 1, 1, 0}

// sockopt is a socket option a test sets on a socket, then undoes: an
// integer (on, off) or, when bytes is set, a byte string (cleared after).
type sockopt struct {
	name       string
	level, opt int
	on, off    int
	bytes      []byte
}

// set applies the option (on) or undoes it (off) on c.
func (o sockopt) set(t *testing.T, c syscall.Conn, on bool) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		switch {
		case o.bytes != nil && on:
			serr = unix.SetsockoptString(int(fd), o.level, o.opt, string(o.bytes))
		case o.bytes != nil:
			serr = unix.SetsockoptString(int(fd), o.level, o.opt, "")
		case on:
			serr = unix.SetsockoptInt(int(fd), o.level, o.opt, o.on)
		default:
			serr = unix.SetsockoptInt(int(fd), o.level, o.opt, o.off)
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		t.Fatalf("%s on a socket: %v", o.name, err)
	}
}
