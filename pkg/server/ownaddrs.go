package server

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/turnd/turnd/internal/netaddr"
)

// ownAddrs is the set of transport addresses turnd itself listens on
// (TURN and HTTP). A peer there would make turnd relay into itself — a loop,
// or a way to reach the HTTP endpoints through the relay — so the handlers
// and the fast path refuse them whatever the peer filter says. A wildcard
// listener stands for every address of the host.
//
// contains runs for every Send indication on the fast path, so the set is
// copy-on-write behind an atomic pointer: readers on all CPUs take no lock
// and share no written cache line; add (a handful of times at start) copies.
type ownAddrs struct {
	mu  sync.Mutex // serialises add
	set atomic.Pointer[map[netip.AddrPort]bool]
}

// add records a listening address.
func (o *ownAddrs) add(a net.Addr) {
	ap := netaddr.AddrPort(a)
	if ap == (netip.AddrPort{}) {
		return // not an IP transport address
	}
	ips := []netip.Addr{ap.Addr()}
	if ap.Addr().IsUnspecified() {
		ips = hostAddrs()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	next := make(map[netip.AddrPort]bool)
	if old := o.set.Load(); old != nil {
		for k := range *old {
			next[k] = true
		}
	}
	for _, ip := range ips {
		next[netip.AddrPortFrom(ip, ap.Port())] = true
	}
	o.set.Store(&next)
}

// contains reports whether peer is one of turnd's own sockets.
//
// Hot path (Send indications): lock-free, no allocation.
func (o *ownAddrs) contains(peer netip.AddrPort) bool {
	set := o.set.Load()
	return set != nil && (*set)[netaddr.Unmap(peer)]
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

// AddOwnAddress tells the server about another socket of its process (the
// HTTP listener) that relayed traffic must never be sent to.
func (s *Server) AddOwnAddress(a net.Addr) { s.own.add(a) }
