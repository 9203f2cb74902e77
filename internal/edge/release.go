package edge

import (
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/turnd/turnd/internal/mmsg"
)

// Release is the old side's end of a hand-over, once the successor serves
// what Export described: the moved lanes' readers and the moved listeners'
// accept loops return (a shared or PROXY port's sides first serve the
// connections it had already taken), the moved connections leave (out of
// their relay loops, this process's descriptor closed without shutdown(2)
// and without StreamOptions.Closed: each lives on in the successor), and
// this process's copies of the UDP sockets, listeners and locks are closed
// and leave s, so Sockets.Close skips them and Failed hears nothing of
// them. Then everything that stayed (TLS connections, pipes, connections
// a port had queued) is served again, as after Resume. ex must be this
// edge's Export of s, made in the current Pause.
func (e *Edge) Release(s *Sockets, ex Export) error {
	m := ex.moved
	if m == nil || m.e != e || m.s != s {
		return fmt.Errorf("release: %w", ErrBadExport)
	}
	e.own.mu.Lock()
	if !e.own.hold.paused || e.own.hold.exported != m {
		e.own.mu.Unlock()
		return fmt.Errorf("release: %w", ErrNotPaused)
	}
	for _, sock := range m.udp {
		if st := e.own.lanes[sock]; st != nil {
			st.released = true
		}
	}
	for _, li := range m.listeners {
		for _, pub := range li.public {
			if a := e.own.accepts[pub]; a != nil {
				a.released = true
			}
		}
	}
	e.own.mu.Unlock()

	for _, c := range m.conns {
		c.leave()
	}
	for _, c := range m.pipes { // the peer connections are the relay's to release
		c.releasePipe()
		c.leave()
	}
	var errs []error
	for _, li := range m.listeners {
		var err error
		if li.port != nil {
			err = li.port.release()
		} else {
			err = li.close()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("release listener %s: %w", li.addr, err))
		}
	}
	if err := closeAll(m.udp); err != nil {
		errs = append(errs, fmt.Errorf("release udp sockets: %w", err))
	}
	if err := closeAll(m.locks); err != nil {
		errs = append(errs, fmt.Errorf("release udp locks: %w", err))
	}
	s.forget(m)
	e.resume(m)
	return errors.Join(errs...)
}

// forget takes what moved out of s.
func (s *Sockets) forget(m *moved) {
	var udp []*mmsg.Socket
	var addrs []string
	for i, sock := range s.UDP {
		if !slices.Contains(m.udp, sock) {
			udp, addrs = append(udp, sock), append(addrs, s.udpAddrs[i])
		}
	}
	s.UDP, s.udpAddrs = udp, addrs
	s.locks = slices.DeleteFunc(s.locks, func(lk *addrLock) bool { return slices.Contains(m.locks, lk) })
	s.listeners = slices.DeleteFunc(s.listeners, func(li *listenerInfo) bool { return slices.Contains(m.listeners, li) })
	gone := func(ln net.Listener) bool {
		for _, li := range m.listeners {
			if slices.Contains(li.public, ln) {
				return true
			}
		}
		return false
	}
	s.TCP = slices.DeleteFunc(s.TCP, gone)
	s.TLS = slices.DeleteFunc(s.TLS, gone)
}

// leave takes a moved connection out of this process: off its relay loop,
// its descriptor closed (the connection lives on in the successor's copy:
// no shutdown, no FIN), its bookings freed, and no Closed callback, so no
// allocation ends with it here.
func (c *clientConn) leave() {
	c.torn.Do(func() { c.forget() }) // a moved pipe's peer moved too: not closed here
}
