package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// echoSocketBuffer is SO_RCVBUF/SO_SNDBUF of the echo sockets, which carry
// every client's traffic: the kernel caps it at net.core.[rw]mem_max.
const echoSocketBuffer = 4 << 20

// echo is the peer the relays send to: it returns every datagram to its
// sender unchanged, in batches (recvmmsg, then sendmmsg of the same
// buffers). Its sockets form an SO_REUSEPORT group on one port, so the
// kernel spreads the relays (distinct source ports) over them; the reply
// leaves from that same port, which the client's channel is bound to.
type echo struct {
	addr  *net.UDPAddr
	conns []*net.UDPConn
	wg    sync.WaitGroup
	in    atomic.Uint64 // datagrams received: the first crossing of the server
	out   atomic.Uint64
	errs  atomic.Uint64 // failed sends (a relay closed early)
}

// startEcho opens n sockets on 127.0.0.1 (one port) and serves until stop.
func startEcho(n, batch, size int) (*echo, error) {
	lc := net.ListenConfig{Control: reusePort}
	e := &echo{}
	addr := "127.0.0.1:0"
	for range n {
		pc, err := lc.ListenPacket(context.Background(), "udp4", addr)
		if err != nil {
			e.stop()
			return nil, fmt.Errorf("open echo socket: %w", err)
		}
		conn := pc.(*net.UDPConn)
		_ = conn.SetReadBuffer(echoSocketBuffer)
		_ = conn.SetWriteBuffer(echoSocketBuffer)
		e.conns = append(e.conns, conn)
		if e.addr == nil {
			e.addr = conn.LocalAddr().(*net.UDPAddr)
			addr = e.addr.String()
		}
	}
	for _, c := range e.conns {
		e.wg.Add(1)
		go e.serve(c, batch, size)
	}
	return e, nil
}

// serve echoes until its socket is closed (hot path).
func (e *echo) serve(c *net.UDPConn, batch, size int) {
	defer e.wg.Done()
	pc := ipv4.NewPacketConn(c)
	bufs := make([][]byte, batch)
	ms := make([]ipv4.Message, batch)
	for i := range ms {
		bufs[i] = make([]byte, size)
		ms[i].Buffers = [][]byte{bufs[i]}
	}
	for {
		for i := range ms {
			ms[i].Buffers[0] = bufs[i]
		}
		n, err := pc.ReadBatch(ms, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP errors surfacing on the socket
		}
		e.in.Add(uint64(n))
		for i := range n {
			ms[i].Buffers[0] = bufs[i][:ms[i].N]
		}
		for sent := 0; sent < n; {
			k, err := pc.WriteBatch(ms[sent:n], 0)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				// Skip the datagram that failed; its relay may be gone.
				e.errs.Add(1)
				k = max(k, 0) + 1
			} else {
				e.out.Add(uint64(k))
			}
			sent += k
		}
	}
}

// stop closes the sockets and waits for the serving goroutines.
func (e *echo) stop() {
	for _, c := range e.conns {
		_ = c.Close()
	}
	e.wg.Wait()
}

// reusePort sets SO_REUSEPORT before bind.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
