package server

import (
	"net"
	"net/netip"
	"sync"
)

// ownAddrs is the set of transport addresses turnd itself listens on
// (TURN and HTTP). A peer there would make turnd relay into itself — a loop,
// or a way to reach the HTTP endpoints through the relay — so the gate and
// the fast path refuse them whatever the peer filter says. A wildcard
// listener stands for every address of the host.
type ownAddrs struct {
	mu  sync.RWMutex
	set map[netip.AddrPort]bool
}

// add records a listening address.
func (o *ownAddrs) add(a net.Addr) {
	ap, ok := addrPortOf(a)
	if !ok {
		return
	}
	ips := []netip.Addr{ap.Addr().Unmap()}
	if ap.Addr().IsUnspecified() {
		ips = hostAddrs()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.set == nil {
		o.set = make(map[netip.AddrPort]bool)
	}
	for _, ip := range ips {
		o.set[netip.AddrPortFrom(ip, ap.Port())] = true
	}
}

// contains reports whether peer is one of turnd's own sockets.
func (o *ownAddrs) contains(peer netip.AddrPort) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.set[netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())]
}

// hostAddrs lists every address of the host's interfaces.
func hostAddrs() []netip.Addr {
	out := []netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified()}
	as, err := net.InterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

func addrPortOf(a net.Addr) (netip.AddrPort, bool) {
	switch v := a.(type) {
	case *net.UDPAddr:
		return v.AddrPort(), true
	case *net.TCPAddr:
		return v.AddrPort(), true
	}
	return netip.AddrPort{}, false
}

// AddOwnAddress tells the server about another socket of its process (the
// HTTP listener) that relayed traffic must never be sent to.
func (s *Server) AddOwnAddress(a net.Addr) { s.own.add(a) }
