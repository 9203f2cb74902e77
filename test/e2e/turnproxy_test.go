package e2e

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// request is what a turnProxy noted of one STUN request a client sent.
type request struct {
	client string // the client's address
	id     [stun.TransactionIDSize]byte
	typ    stun.MessageType
	attrs  []stun.AttrType // in wire order
	nonce  string          // as the client sent it
	stale  bool            // passed to turnd with a nonce turnd never issued (nonceAlias)
	// release: a Refresh with LIFETIME 0, which deletes the allocation.
	release bool
}

// has reports whether the request carries an attribute of type a.
func (r request) has(a stun.AttrType) bool {
	for _, x := range r.attrs {
		if x == a {
			return true
		}
	}
	return false
}

// answer is what a turnProxy noted of turnd's response to a request.
type answer struct {
	typ   stun.MessageType
	code  stun.ErrorCode // 0 for a success
	nonce string         // as turnd sent it
	shown string         // the nonce as the client got it (nonceAlias)
}

// turnProxy is a loopback UDP proxy between TURN clients and turnd that
// notes each STUN request the clients send and turnd's answers, so a test
// sees what a client that cannot be instrumented (Chromium) puts on the
// wire. Each client address gets its own socket towards turnd, so turnd
// still sees one 5-tuple per client.
type turnProxy struct {
	front  *net.UDPConn
	server *net.UDPAddr
	alias  *nonceAlias // nil: datagrams pass unchanged

	mu       sync.Mutex
	backs    map[string]*net.UDPConn // by client address
	requests []request
	answers  map[[stun.TransactionIDSize]byte]answer
	changed  chan struct{} // closed and replaced on every request or answer noted
}

// newTurnProxy listens on ip (port chosen by the kernel) and forwards to
// server; alias, if not nil, rewrites nonces on the way.
func newTurnProxy(t *testing.T, ip net.IP, server string, alias *nonceAlias) *turnProxy {
	t.Helper()
	to, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		t.Fatal(err)
	}
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	p := &turnProxy{front: front, server: to, alias: alias, backs: map[string]*net.UDPConn{},
		answers: map[[stun.TransactionIDSize]byte]answer{}, changed: make(chan struct{})}
	t.Cleanup(p.close)
	go p.forward()
	return p
}

// Addr is where clients send.
func (p *turnProxy) Addr() *net.UDPAddr { return p.front.LocalAddr().(*net.UDPAddr) }

// Requests returns the requests noted so far.
func (p *turnProxy) Requests() []request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]request(nil), p.requests...)
}

// Answer returns turnd's response to q, if one passed.
func (p *turnProxy) Answer(q request) (answer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.answers[q.id]
	return a, ok
}

// await waits until cond holds of the requests noted, failing the test
// after readDeadline.
func (p *turnProxy) await(t *testing.T, what string, cond func([]request) bool) {
	t.Helper()
	deadline := time.After(readDeadline)
	for {
		p.mu.Lock()
		reqs, changed := append([]request(nil), p.requests...), p.changed
		p.mu.Unlock()
		if cond(reqs) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%s: not within %v", what, readDeadline)
		}
	}
}

// forward relays clients' datagrams to turnd until the front socket closes.
func (p *turnProxy) forward() {
	buf := make([]byte, 65536)
	for {
		n, from, err := p.front.ReadFromUDP(buf)
		if err != nil {
			return // closed
		}
		pkt := p.noteRequest(from, buf[:n])
		back := p.back(from)
		if back == nil {
			return // closing
		}
		_, _ = back.Write(pkt)
	}
}

// back returns client's socket towards turnd, opening it (and the
// goroutine relaying turnd's answers) on the client's first datagram.
func (p *turnProxy) back(client *net.UDPAddr) *net.UDPConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.backs == nil {
		return nil
	}
	if c, ok := p.backs[client.String()]; ok {
		return c
	}
	c, err := net.DialUDP("udp", nil, p.server)
	if err != nil {
		return nil
	}
	p.backs[client.String()] = c
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return // closed
			}
			_, _ = p.front.WriteToUDP(p.noteAnswer(buf[:n]), client)
		}
	}()
	return c
}

// noteRequest records a client's request and returns the datagram to forward.
func (p *turnProxy) noteRequest(from *net.UDPAddr, b []byte) []byte {
	m := decodeSTUN(b)
	if m == nil || m.Type.Class != stun.ClassRequest {
		return b // ChannelData, or not for the record
	}
	q := request{client: from.String(), id: m.TransactionID, typ: m.Type}
	for _, a := range m.Attributes {
		q.attrs = append(q.attrs, a.Type)
	}
	if v, err := m.Get(stun.AttrNonce); err == nil {
		q.nonce = string(v)
	}
	if v, err := m.Get(stun.AttrLifetime); err == nil && m.Type.Method == stun.MethodRefresh && len(v) == 4 {
		q.release = v[0]|v[1]|v[2]|v[3] == 0
	}
	if p.alias != nil {
		b, q.stale = p.alias.request(q, m, b)
	}
	p.mu.Lock()
	p.requests = append(p.requests, q)
	p.signal()
	p.mu.Unlock()
	return b
}

// noteAnswer records turnd's response and returns the datagram to pass on.
func (p *turnProxy) noteAnswer(b []byte) []byte {
	m := decodeSTUN(b)
	if m == nil || (m.Type.Class != stun.ClassSuccessResponse && m.Type.Class != stun.ClassErrorResponse) {
		return b
	}
	a := answer{typ: m.Type}
	var ec stun.ErrorCodeAttribute
	if ec.GetFrom(m) == nil {
		a.code = ec.Code
	}
	if v, err := m.Get(stun.AttrNonce); err == nil {
		a.nonce = string(v)
	}
	a.shown = a.nonce
	if p.alias != nil {
		b, a.shown = p.alias.answer(a, m, b)
	}
	p.mu.Lock()
	p.answers[m.TransactionID] = a
	p.signal()
	p.mu.Unlock()
	return b
}

// decodeSTUN decodes a copy of b, or returns nil if b is no STUN message.
func decodeSTUN(b []byte) *stun.Message {
	if !stun.IsMessage(b) {
		return nil
	}
	m := &stun.Message{Raw: append([]byte(nil), b...)}
	if m.Decode() != nil {
		return nil
	}
	return m
}

// signal wakes await; p.mu is held.
func (p *turnProxy) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *turnProxy) close() {
	p.front.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.backs {
		c.Close()
	}
	p.backs = nil
}
