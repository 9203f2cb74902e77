package e2e

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// streamRate is the numbered streams' rate, a voice call's packet rate.
const streamRate = 200

// streamMax bounds a stream: it stops by itself after a minute even if the
// test never stops it.
const streamMax = 60 * streamRate

// numbered is a stream of numbered datagrams a client sends through its
// relay to an echo peer at streamRate, and the echoes it reads back: each
// number must come back exactly once.
type numbered struct {
	pc   net.PacketConn // pion's relayed connection
	peer net.Addr
	stop chan struct{}
	sent chan int // how many it sent, once the sender stopped
	quit chan struct{}
	done chan struct{} // the reader returned

	mu       sync.Mutex
	echoes   map[uint32]int
	distinct int
	last     time.Time
	maxGap   time.Duration
	gapEnd   time.Time     // when the longest gap ended
	more     chan struct{} // closed and replaced on every echo
	writeErr error
	readErr  error
}

// startNumbered starts sending on pc to peer and reading the echoes.
func startNumbered(pc net.PacketConn, peer net.Addr) *numbered {
	s := &numbered{pc: pc, peer: peer, stop: make(chan struct{}), sent: make(chan int, 1),
		quit: make(chan struct{}), done: make(chan struct{}), echoes: make(map[uint32]int), more: make(chan struct{})}
	go s.send()
	go s.read()
	return s
}

func (s *numbered) send() {
	tick := time.NewTicker(time.Second / streamRate)
	defer tick.Stop()
	buf := make([]byte, 100)
	copy(buf[4:], "turnd hand-over stream: every number comes back once")
	n := 0
	defer func() { s.sent <- n }()
	for n < streamMax {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		binary.BigEndian.PutUint32(buf, uint32(n))
		if _, err := s.pc.WriteTo(buf, s.peer); err != nil {
			s.mu.Lock()
			s.writeErr = err
			s.mu.Unlock()
			return
		}
		n++
	}
}

func (s *numbered) read() {
	defer close(s.done)
	buf := make([]byte, 1500)
	for {
		_ = s.pc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := s.pc.ReadFrom(buf)
		now := time.Now()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
				select {
				case <-s.quit:
					return
				default:
					continue
				}
			}
			s.mu.Lock()
			s.readErr = err
			s.mu.Unlock()
			return
		}
		if n < 4 {
			continue
		}
		seq := binary.BigEndian.Uint32(buf)
		s.mu.Lock()
		if s.echoes[seq]++; s.echoes[seq] == 1 {
			s.distinct++
		}
		if !s.last.IsZero() && now.Sub(s.last) > s.maxGap {
			s.maxGap, s.gapEnd = now.Sub(s.last), now
		}
		s.last = now
		close(s.more)
		s.more = make(chan struct{})
		s.mu.Unlock()
	}
}

// echoed is how many numbers have come back so far.
func (s *numbered) echoed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.distinct
}

// waitEchoes waits until n numbers have come back.
func (s *numbered) waitEchoes(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		got, more, werr, rerr := s.distinct, s.more, s.writeErr, s.readErr
		s.mu.Unlock()
		if got >= n {
			return
		}
		if werr != nil || rerr != nil {
			t.Fatalf("stream broke after %d echoes: write %v, read %v", got, werr, rerr)
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("%d/%d echoes after %v", got, n, timeout)
		}
	}
}

// streamResult is what a numbered stream saw.
type streamResult struct {
	sent, echoed, duplicates int
	missing                  []uint32 // the first few numbers that never came back
	maxGap                   time.Duration
	gapEnd                   time.Time
	writeErr, readErr        error
}

// finish stops sending, waits for the last echoes (bounded: readDeadline)
// and stops reading.
func (s *numbered) finish(t *testing.T) streamResult {
	t.Helper()
	close(s.stop)
	sent := <-s.sent
	deadline := time.After(readDeadline)
wait:
	for {
		s.mu.Lock()
		got, more := s.distinct, s.more
		s.mu.Unlock()
		if got >= sent {
			break
		}
		select {
		case <-more:
		case <-deadline:
			break wait
		}
	}
	close(s.quit)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	r := streamResult{sent: sent, echoed: s.distinct, maxGap: s.maxGap, gapEnd: s.gapEnd,
		writeErr: s.writeErr, readErr: s.readErr}
	for seq := 0; seq < sent; seq++ {
		switch c := s.echoes[uint32(seq)]; {
		case c == 0 && len(r.missing) < 20:
			r.missing = append(r.missing, uint32(seq))
		case c > 1:
			r.duplicates += c - 1
		}
	}
	return r
}

// requirePerfect fails unless every number sent came back exactly once.
func (r streamResult) requirePerfect(t *testing.T, name string) {
	t.Helper()
	t.Logf("%s: %d sent, %d echoed, %d duplicated; longest gap between echoes %v",
		name, r.sent, r.echoed, r.duplicates, r.maxGap.Round(100*time.Microsecond))
	if r.writeErr != nil || r.readErr != nil || r.echoed != r.sent || r.duplicates != 0 || r.sent < streamRate {
		t.Errorf("%s: %d sent, %d came back (first missing %v), %d duplicates; write error %v, read error %v",
			name, r.sent, r.echoed, r.missing, r.duplicates, r.writeErr, r.readErr)
	}
}

// countingPeer is a UDP echo peer that notes where each datagram came
// from: one allocation's datagrams must all come from its relayed address.
type countingPeer struct {
	conn *net.UDPConn
	mu   sync.Mutex
	from map[string]int
}

func newCountingPeer(t *testing.T) *countingPeer {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	// Room for what queues while the test is busy: the peer is not under test.
	_ = conn.SetReadBuffer(4 << 20)
	p := &countingPeer{conn: conn, from: make(map[string]int)}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return // closed by the cleanup
			}
			p.mu.Lock()
			p.from[from.String()]++
			p.mu.Unlock()
			_, _ = conn.WriteToUDP(buf[:n], from)
		}
	}()
	return p
}

func (p *countingPeer) addr() *net.UDPAddr { return p.conn.LocalAddr().(*net.UDPAddr) }

// sources is how many datagrams came from each address.
func (p *countingPeer) sources() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.from))
	for k, v := range p.from {
		out[k] = v
	}
	return out
}
