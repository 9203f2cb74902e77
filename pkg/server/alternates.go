package server

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/pkg/peerfilter"
)

// Resolver looks up the addresses of a name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// defaultAlternatesRefresh is how often names in drain.alternate_servers are
// resolved again while a drain lasts: peers come and go (a headless
// Service's DNS holds only ready pods).
const defaultAlternatesRefresh = 10 * time.Second

// lookupTimeout bounds one resolution of one name.
const lookupTimeout = 5 * time.Second

// maxResolvedPerFamily bounds the records of each family kept for one name:
// an answer of thousands of records must not make a list the Allocate
// handler scans for every redirect, and a fleet larger than this still
// spreads out, each server redirecting to a part of it.
const maxResolvedPerFamily = 16

// alternateEntry is one item of drain.alternate_servers: an IP literal or a
// DNS name, with its port.
type alternateEntry struct {
	host string
	ip   netip.Addr // valid for a literal
	port uint16
}

// alternates keeps the servers a draining turnd redirects new clients to.
// Names are resolved when a drain starts and again every refresh while it
// lasts, never on the packet path; their A/AAAA records count, less turnd's
// own addresses and special-purpose ones (see newAlternates). The Allocate
// handler reads the current list lock-free.
type alternates struct {
	resolver Resolver
	own      func(netip.AddrPort) bool
	log      *slog.Logger
	refresh  time.Duration
	// usable judges a resolved record; built by newAlternates.
	usable *peerfilter.Filter

	current atomic.Pointer[[]*net.UDPAddr]

	mu      sync.Mutex // a reload and the refresh loop both publish
	entries []alternateEntry
	fleet   []alternateEntry // the fleet's least-loaded node, used while entries is empty
	// resolved holds the last good answer per name, so a failed lookup
	// keeps the peers known before it.
	resolved map[string][]netip.Addr
}

// newAlternates returns an empty list whose names resolver resolves.
//
// A resolved record is kept only where a client could be sent: the peer
// filter's built-in special-purpose ranges (this network, multicast,
// link-local and cloud metadata, documentation, and their NAT64 and 6to4
// forms) are refused, so a wrong or hostile DNS answer cannot point clients
// there. RFC 1918 and fd00::/8 stay allowed as for peers, and 100.64.0.0/10
// too, which peers may not use: fleets live in all three, and the clients
// sent there are those that reach them. Loopback is kept; the handler offers
// it to loopback clients only. The operator's peer rules do not apply: they
// say where clients may relay, not where turnd's fleet is.
func newAlternates(resolver Resolver, own func(netip.AddrPort) bool, log *slog.Logger, refresh time.Duration) *alternates {
	// peerfilter.New fails only on bad entries, and there are none.
	usable, _ := peerfilter.New(peerfilter.Options{AllowLoopback: true, Allowed: []string{
		"100.64.0.0-100.100.100.199", "100.100.100.201-100.127.255.255", // all but Alibaba Cloud's metadata address
	}})
	return &alternates{resolver: resolver, own: own, log: log, refresh: refresh, usable: usable}
}

// keep returns the records of one answer worth publishing: usable ones, at
// most maxResolvedPerFamily of each family. Past that a random sample is
// kept, so that draining servers do not all send clients to the same part of
// a large fleet.
func (a *alternates) keep(ips []netip.Addr) []netip.Addr {
	var v4, v6 []netip.Addr
	for _, ip := range ips {
		ip = ip.Unmap().WithZone("")
		if !a.usable.AllowedAddr(ip) {
			continue
		}
		if ip.Is4() {
			v4 = append(v4, ip)
		} else {
			v6 = append(v6, ip)
		}
	}
	return append(sample(v4, maxResolvedPerFamily), sample(v6, maxResolvedPerFamily)...)
}

// sample returns at most n of ips, chosen at random when there are more.
func sample(ips []netip.Addr, n int) []netip.Addr {
	if len(ips) > n {
		rand.Shuffle(len(ips), func(i, j int) { ips[i], ips[j] = ips[j], ips[i] })
		ips = ips[:n]
	}
	return ips
}

// parseAlternates reads drain.alternate_servers, which Validate has checked.
func parseAlternates(list []string) ([]alternateEntry, error) {
	out := make([]alternateEntry, 0, len(list))
	for i, hp := range list {
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			return nil, fmt.Errorf("drain.alternate_servers[%d]: %w", i, err)
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("drain.alternate_servers[%d]: port: %w", i, err)
		}
		e := alternateEntry{host: host, port: uint16(n)}
		if ip, err := netip.ParseAddr(host); err == nil {
			e.ip = ip.Unmap()
		}
		out = append(out, e)
	}
	return out, nil
}

// set installs a new list. Literals take effect at once; names keep what was
// last resolved for them until the next resolution.
func (a *alternates) set(entries []alternateEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = entries
	a.publish()
}

// setFleet installs the fleet's choice, offered while the configured list
// is empty.
func (a *alternates) setFleet(entries []alternateEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fleet = entries
	a.publish()
}

// effective is the list in force: the configured one, else the fleet's.
// Called with mu held.
func (a *alternates) effective() []alternateEntry {
	if len(a.entries) > 0 {
		return a.entries
	}
	return a.fleet
}

// republish recomputes the list, after turnd's own addresses changed.
func (a *alternates) republish() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.publish()
}

// list is what the Allocate handler offers now.
func (a *alternates) list() []*net.UDPAddr {
	if p := a.current.Load(); p != nil {
		return *p
	}
	return nil
}

// hasNames reports whether any entry needs resolving.
func (a *alternates) hasNames() bool {
	return len(a.names()) > 0
}

// names lists the entries that need resolving.
func (a *alternates) names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, e := range a.effective() {
		if !e.ip.IsValid() {
			out = append(out, e.host)
		}
	}
	return out
}

// resolve looks every name up again and publishes the result.
func (a *alternates) resolve(ctx context.Context) {
	got := make(map[string][]netip.Addr)
	for _, host := range a.names() {
		lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		ips, err := a.resolver.LookupNetIP(lctx, "ip", host)
		cancel()
		if err != nil {
			a.log.Warn("resolve alternate server", "name", host, "err", err)
			continue
		}
		got[host] = a.keep(ips)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.resolved == nil {
		a.resolved = make(map[string][]netip.Addr)
	}
	for host, ips := range got {
		a.resolved[host] = ips
	}
	a.publish()
}

// publish computes the list from the entries and the last resolutions.
// Called with mu held.
func (a *alternates) publish() {
	var out []*net.UDPAddr
	seen := make(map[netip.AddrPort]bool)
	add := func(ip netip.Addr, port uint16) {
		ap := netip.AddrPortFrom(ip.Unmap(), port)
		if seen[ap] || (a.own != nil && a.own(ap)) {
			return // turnd never redirects a client to itself
		}
		seen[ap] = true
		out = append(out, net.UDPAddrFromAddrPort(ap))
	}
	for _, e := range a.effective() {
		if e.ip.IsValid() {
			add(e.ip, e.port)
			continue
		}
		for _, ip := range a.resolved[e.host] {
			add(ip, e.port)
		}
	}
	a.current.Store(&out)
}

// run resolves the names whenever a drain starts (accepting turns false:
// changed fires on every drain status change) and every refresh while it
// lasts, until done is closed.
func (a *alternates) run(accepting func() bool, changed <-chan struct{}, done <-chan struct{}) {
	var tick *time.Ticker
	var tickC <-chan time.Time
	stop := func() {
		if tick != nil {
			tick.Stop()
			tick, tickC = nil, nil
		}
	}
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-done; cancel() }()
	for {
		select {
		case <-done:
			return
		case <-changed:
			if accepting() {
				stop()
				continue
			}
			if tick != nil {
				continue // already draining: the ticker keeps it fresh
			}
			tick = time.NewTicker(a.refresh)
			tickC = tick.C
		case <-tickC:
		}
		if a.hasNames() {
			a.resolve(ctx)
		}
	}
}
