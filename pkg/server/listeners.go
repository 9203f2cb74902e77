package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// socketBuffer is the receive and send buffer asked for on every
// client-facing UDP socket: bursts of media from many clients land on one
// socket, and the kernel default (≈200 KiB) overflows first. The kernel caps
// it at net.core.rmem_max / wmem_max.
const socketBuffer = 4 << 20

// reusePort lets every socket of a UDP group bind the same address; the
// kernel then spreads client flows over them by 5-tuple hash.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}

// listenUDPGroup binds n SO_REUSEPORT sockets on addr. With port 0 the first
// socket picks the port and the others join it.
func listenUDPGroup(addr string, n int) ([]net.PacketConn, error) {
	lc := net.ListenConfig{Control: reusePort}
	var conns []net.PacketConn
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	for i := 0; i < n; i++ {
		c, err := lc.ListenPacket(context.Background(), "udp", addr)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("listen udp %s: %w", addr, err)
		}
		conns = append(conns, c)
		uc := c.(*net.UDPConn)
		_ = uc.SetReadBuffer(socketBuffer) // best effort: capped by the kernel
		_ = uc.SetWriteBuffer(socketBuffer)
		if i == 0 {
			addr = c.LocalAddr().String()
		}
	}
	return conns, nil
}

// listenTCP binds a TCP listener; with cfg it speaks TLS.
func listenTCP(addr string, cfg *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen tcp %s: %w", addr, err)
	}
	if cfg != nil {
		return tls.NewListener(ln, cfg), nil
	}
	return ln, nil
}

// closeAll closes sockets and joins their errors.
func closeAll[T interface{ Close() error }](xs []T) error {
	var errs []error
	for _, x := range xs {
		if err := x.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
