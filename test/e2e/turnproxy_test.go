package e2e

import (
	"net"
	"sync"
	"testing"

	"github.com/pion/stun/v4"
)

// request is what a turnProxy noted of one STUN request a client sent.
type request struct {
	typ   stun.MessageType
	attrs []stun.AttrType // in wire order
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

// turnProxy is a loopback UDP proxy between TURN clients and turnd that
// notes each STUN request the clients send, so a test sees what a client
// that cannot be instrumented (Chromium) puts on the wire. Each client
// address gets its own socket towards turnd, so turnd still sees one
// 5-tuple per client.
type turnProxy struct {
	front  *net.UDPConn
	server *net.UDPAddr

	mu       sync.Mutex
	backs    map[string]*net.UDPConn // by client address
	requests []request
}

// newTurnProxy listens on ip (port chosen by the kernel) and forwards to server.
func newTurnProxy(t *testing.T, ip net.IP, server string) *turnProxy {
	t.Helper()
	to, err := net.ResolveUDPAddr("udp", server)
	if err != nil {
		t.Fatal(err)
	}
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	p := &turnProxy{front: front, server: to, backs: map[string]*net.UDPConn{}}
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

// forward relays clients' datagrams to turnd until the front socket closes.
func (p *turnProxy) forward() {
	buf := make([]byte, 65536)
	for {
		n, from, err := p.front.ReadFromUDP(buf)
		if err != nil {
			return // closed
		}
		p.note(buf[:n])
		back := p.back(from)
		if back == nil {
			return // closing
		}
		_, _ = back.Write(buf[:n])
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
			_, _ = p.front.WriteToUDP(buf[:n], client)
		}
	}()
	return c
}

func (p *turnProxy) note(b []byte) {
	if !stun.IsMessage(b) {
		return // ChannelData
	}
	m := &stun.Message{Raw: append([]byte(nil), b...)}
	if m.Decode() != nil || m.Type.Class != stun.ClassRequest {
		return
	}
	r := request{typ: m.Type}
	for _, a := range m.Attributes {
		r.attrs = append(r.attrs, a.Type)
	}
	p.mu.Lock()
	p.requests = append(p.requests, r)
	p.mu.Unlock()
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
