package deploytest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// A session is a call's worth of TURN: one TCP client with an allocation that
// relays a numbered packet to a UDP echo peer every packetInterval and waits
// for it to come back before sending the next (stop-and-wait, so a lost,
// duplicated or reordered packet is seen at once), refreshing its
// allocation as a WebRTC client does.
const (
	packetInterval = 20 * time.Millisecond
	// echoTimeout is how long a packet may take to come back before it
	// counts as lost; on veth or loopback the round trip is well under 1 ms.
	echoTimeout  = 2 * time.Second
	refreshEvery = time.Second
)

// How a session ends: a Refresh with lifetime 0 (RFC 8656 section 7) or
// closing the TCP connection, which ends its allocation too.
type sessionEnd int

const (
	endRefreshZero sessionEnd = iota
	endCloseConn
)

func (e sessionEnd) String() string {
	return [...]string{"refresh lifetime 0", "close tcp connection"}[e]
}

// session is one running call; see openSession.
type session struct {
	name string
	c    *turnClient
	peer netip.AddrPort
	stop chan sessionEnd
	done chan struct{}

	mu        sync.Mutex
	echoed    int
	refreshes int
	progress  chan struct{} // closed and replaced on every echo
	err       error
	ended     time.Time // when the allocation was gone, as far as the client knows
}

// openSession allocates on server over TCP, permits peer, and starts
// relaying.
func openSession(t *testing.T, name string, dial dialFunc, server, user, pass string, peer netip.AddrPort) (*session, error) {
	c, err := dialTURN(dial, "tcp", server, user, pass)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	code, _, _, err := c.allocate()
	if err == nil && code != 0 {
		err = fmt.Errorf("allocate: error response %d", code)
	}
	if err == nil {
		if err = codeErr(c.permit(peer)); err != nil {
			err = fmt.Errorf("create permission for %v: %w", peer, err)
		}
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("session %s on %s: %w", name, server, err)
	}
	s := &session{name: name, c: c, peer: peer, stop: make(chan sessionEnd, 1), done: make(chan struct{}),
		progress: make(chan struct{})}
	go s.run()
	return s, nil
}

func (s *session) run() {
	defer close(s.done)
	tick := time.NewTicker(packetInterval)
	defer tick.Stop()
	refreshed := time.Now()
	for seq := 1; ; seq++ {
		select {
		case how := <-s.stop:
			s.finish(s.end(how))
			return
		case <-tick.C:
		}
		if time.Since(refreshed) >= refreshEvery {
			if err := codeErr(s.c.refresh(10 * time.Minute)); err != nil {
				s.finish(fmt.Errorf("refresh after %d packets: %w", s.count(), err))
				return
			}
			refreshed = time.Now()
			s.mu.Lock()
			s.refreshes++
			s.mu.Unlock()
		}
		if err := s.echo(seq); err != nil {
			s.finish(err)
			return
		}
	}
}

// echo sends packet seq and waits for exactly it to come back from the peer.
func (s *session) echo(seq int) error {
	want := fmt.Appendf(nil, "%s #%06d", s.name, seq)
	if err := s.c.send(s.peer, want); err != nil {
		return err
	}
	got, from, err := s.c.readData(time.Now().Add(echoTimeout))
	if err != nil {
		return fmt.Errorf("packet #%d lost after %d echoed: %w", seq, seq-1, err)
	}
	if !bytes.Equal(got, want) || from != s.peer {
		return fmt.Errorf("packet #%d: got %q from %v, want %q from %v", seq, got, from, want, s.peer)
	}
	s.mu.Lock()
	s.echoed = seq
	close(s.progress)
	s.progress = make(chan struct{})
	s.mu.Unlock()
	return nil
}

func (s *session) end(how sessionEnd) error {
	defer s.c.Close()
	if how == endRefreshZero {
		if err := codeErr(s.c.refresh(0)); err != nil {
			return fmt.Errorf("refresh lifetime 0: %w", err)
		}
	}
	return nil
}

// codeErr turns a request's (error code, error) into one error.
func codeErr(code int, err error) error {
	if err == nil && code != 0 {
		return fmt.Errorf("error response %d", code)
	}
	return err
}

func (s *session) finish(err error) {
	s.c.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err, s.ended = err, time.Now()
}

func (s *session) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.echoed
}

func (s *session) refreshCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshes
}

// waitEchoed waits until n packets have come back.
func (s *session) waitEchoed(n int, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		echoed, progress, err := s.echoed, s.progress, s.err
		s.mu.Unlock()
		switch {
		case echoed >= n:
			return nil
		case err != nil:
			return fmt.Errorf("session %s: %w", s.name, err)
		}
		select {
		case <-progress:
		case <-s.done:
		case <-deadline:
			return fmt.Errorf("session %s: %d/%d packets echoed after %v", s.name, echoed, n, timeout)
		}
	}
}

// failed returns the session's error if it has already stopped on one.
func (s *session) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// close stops the session the way how says and returns its error, if any, and
// the moment its allocation was gone.
func (s *session) close(how sessionEnd) (time.Time, error) {
	select {
	case s.stop <- how:
	case <-s.done:
	}
	select {
	case <-s.done:
	case <-time.After(2 * rtt):
		return time.Time{}, fmt.Errorf("session %s did not stop", s.name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.ended, fmt.Errorf("session %s (%d packets echoed, %d refreshes): %w", s.name, s.echoed, s.refreshes, s.err)
	}
	return s.ended, nil
}

// summary is a one-line account of the session for the test log.
func (s *session) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%s: %d packets echoed in order, %d refreshes", s.name, s.echoed, s.refreshes)
}

// listenFunc opens a packet socket; tests pass net.ListenPacket or a
// listener inside a network namespace.
type listenFunc func(network, addr string) (net.PacketConn, error)

// startEchoPeer runs a UDP echo server on each address, closed at cleanup.
func startEchoPeer(t *testing.T, listen listenFunc, addrs ...string) []netip.AddrPort {
	t.Helper()
	var out []netip.AddrPort
	for _, addr := range addrs {
		pc, err := listen("udp4", addr)
		if err != nil {
			t.Fatalf("echo peer: %v", err)
		}
		t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 2048)
			for {
				n, from, err := pc.ReadFrom(buf)
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err == nil {
					_, _ = pc.WriteTo(buf[:n], from)
				}
			}
		}()
		a := pc.LocalAddr().(*net.UDPAddr).AddrPort()
		out = append(out, netip.AddrPortFrom(a.Addr().Unmap(), a.Port()))
	}
	return out
}
