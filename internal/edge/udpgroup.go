package edge

import (
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/mmsg"
)

// socketOptions prepares every socket of a UDP group before bind:
// SO_REUSEPORT lets all of them bind the same address (the kernel then
// spreads client flows over them by 5-tuple hash), and a buffer > 0 is asked
// for as receive and send buffer (best effort: capped by the kernel).
func socketOptions(buffer int) func(_, _ string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			if serr == nil && buffer > 0 {
				_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, buffer)
				_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, buffer)
			}
		}); err != nil {
			return err
		}
		return serr
	}
}

// listenUDPGroup binds n SO_REUSEPORT sockets on addr. With port 0 the first
// socket picks the port and the others join it. buffer (listen.socket_buffer)
// is asked for as receive and send buffer: bursts of media from many clients
// land on one socket, and the kernel default (≈200 KiB) overflows first.
// The sockets stay out of the runtime's poller (see mmsg.Socket): the
// downlink loops send every relayed packet through them.
func listenUDPGroup(addr string, n, buffer int) ([]*mmsg.Socket, error) {
	var conns []*mmsg.Socket
	for i := 0; i < n; i++ {
		c, err := mmsg.ListenUDP("udp", addr, socketOptions(buffer))
		if err != nil {
			_ = closeAll(conns)
			return nil, err // net's error already reads "listen udp ADDR: ..."
		}
		conns = append(conns, c)
		if i == 0 {
			addr = c.LocalAddr().String()
		}
	}
	return conns, nil
}
