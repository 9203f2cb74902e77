package coturnconf

import (
	"net/netip"
	"slices"
	"strings"
)

// mapping is an external-ip given as "public/private".
type mapping struct {
	public, private netip.Addr
	o               Option
}

// relay converts relay-ip, external-ip, the port range and the relay kinds.
// turnd relays from one address of each family and advertises one external
// address for each, where coturn may have several; what is left out is
// reported.
func (c *converter) relay() {
	relays, relayOpts := c.addrs("relay-ip")
	var chosen []netip.Addr // at most one of each family
	switch {
	case len(relays) > 0:
		var why []string
		for i, r := range relays {
			if j := slices.IndexFunc(chosen, func(a netip.Addr) bool { return a.Is4() == r.Is4() }); j >= 0 {
				c.warn(relayOpts[i], "turnd relays from one address of each family, %s; this one is not carried over", chosen[j])
				continue
			}
			chosen, why = append(chosen, r), append(why, src(relayOpts[i]))
		}
		c.why["relay.address"] = strings.Join(why, ", ")
	default:
		listens, listenOpts := c.quietAddrs("listening-ip")
		if len(listens) > 0 {
			chosen = []netip.Addr{listens[0]}
			c.why["relay.address"] = "relay-ip not set: coturn relays from the listening address, " + src(listenOpts[0])
			if len(listens) > 1 {
				c.warnAll("relay-ip", Warning, "not set: coturn relayed from whichever listening address a client used; "+
					"turnd relays every allocation from the first, %s", listens[0])
			}
		}
	}

	plain, mappings := c.externals()
	switch {
	case len(chosen) > 0:
		c.external(chosen, plain, mappings)
	case len(mappings) > 0:
		m := mappings[0]
		chosen = []netip.Addr{m.private}
		c.why["relay.address"] = "relay-ip not set: the private half of " + src(m.o)
		c.external(chosen, plain, mappings)
	case plain != nil:
		relay := netip.IPv4Unspecified()
		if plain.public.Is6() {
			relay = netip.IPv6Unspecified()
		}
		chosen = []netip.Addr{relay}
		c.why["relay.address"] = "relay-ip not set: coturn relayed from the machine's addresses; turnd binds every one"
		c.external(chosen, plain, nil)
	default:
		c.warnAll("relay-ip", Warning, "no relay-ip, listening-ip or external-ip: coturn relayed from each address of "+
			"the machine, but turnd needs the one address to give clients. Add relay-ip=ADDRESS (or external-ip=PUBLIC) "+
			"to the coturn config, or after -- on the import-coturn command line")
	}
	if len(chosen) > 0 {
		c.cfg.Relay.Address = joinAddrs(chosen)
	}

	for _, r := range []struct {
		name string
		dst  *int
	}{{"min-port", &c.cfg.Relay.MinPort}, {"max-port", &c.cfg.Relay.MaxPort}} {
		if o, ok := c.last(r.name); ok {
			if n, ok := c.integer(o, isPort); ok {
				*r.dst, c.why["relay."+strings.ReplaceAll(r.name, "-", "_")] = n, src(o)
			} else {
				c.warn(o, "%q is not a port; keeping %d", o.Value, *r.dst)
			}
		}
	}
	if o, on := c.flag("no-tcp-relay"); on {
		c.cfg.Relay.TCPAllocations, c.why["relay.tcp_allocations"] = false, src(o)+": answered with 442"
	}
	if o, on := c.flag("no-udp-relay"); on {
		c.warn(o, "turnd always offers UDP relays; it cannot be limited to RFC 6062 TCP relays")
	}
}

// externals reads external-ip: coturn keeps the first "public" form (it
// refuses a second one) and every "public/private" mapping.
func (c *converter) externals() (plain *mapping, mappings []mapping) {
	for _, o := range c.opts["external-ip"] {
		v := strings.TrimSpace(o.Value)
		pub, priv, isMapping := strings.Cut(v, "/")
		public, ok := c.ip(o, pub)
		if !ok {
			continue
		}
		if !isMapping {
			if plain != nil {
				c.warn(o, `coturn accepts one external-ip without a private part and ignored this one ("You cannot define `+
					`external IP more than once"); not carried over`)
				continue
			}
			plain = &mapping{public: public, o: o}
			continue
		}
		private, ok := c.ip(o, priv)
		if !ok {
			continue
		}
		m := mapping{public: public, private: private, o: o}
		mappings = append(mappings, m)
		c.privates = append(c.privates, m)
	}
	return plain, mappings
}

// external picks the external address of each relay address: its mapping,
// else the plain external-ip if it applies to it as in coturn (same family,
// not loopback).
func (c *converter) external(relays []netip.Addr, plain *mapping, mappings []mapping) {
	exts := make([]netip.Addr, len(relays))
	var why []string
	for _, m := range mappings {
		i := slices.Index(relays, m.private)
		if i < 0 || exts[i].IsValid() {
			c.warn(m.o, "maps %s, which is not turnd's relay address %s; not carried over (turnd advertises one address per relay address)",
				m.private, joinAddrs(relays))
			continue
		}
		exts[i], why = m.public, append(why, src(m.o))
	}
	if plain != nil {
		applied, mapped, sameFamily := false, false, false
		var loopback netip.Addr
		for i, r := range relays {
			if r.Is4() != plain.public.Is4() {
				continue
			}
			sameFamily = true
			switch {
			case exts[i].IsValid():
				mapped = true
			case r.IsLoopback():
				loopback = r
			default:
				exts[i], why, applied = plain.public, append(why, src(plain.o)), true
			}
		}
		switch {
		case applied:
		case mapped:
			c.warn(plain.o, "the mapping of the relay address takes precedence; not carried over")
		case !sameFamily:
			c.warn(plain.o, "coturn applies it to relay addresses of the same family only, and the relay address %s is not; "+
				"not carried over", joinAddrs(relays))
		default:
			c.warn(plain.o, "coturn does not apply it to the loopback relay address %s; not carried over", loopback)
		}
	}
	var set []netip.Addr
	for _, e := range exts {
		if e.IsValid() {
			set = append(set, e)
		}
	}
	if len(set) > 0 {
		c.cfg.Relay.ExternalAddress, c.why["relay.external_address"] = joinAddrs(set), strings.Join(why, ", ")
	}
}

// joinAddrs writes addresses as relay.address takes them: comma-separated.
func joinAddrs(as []netip.Addr) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.String()
	}
	return strings.Join(parts, ",")
}

// quietAddrs is addrs without findings, for a second look at an option
// already reported on.
func (c *converter) quietAddrs(name string) ([]netip.Addr, []Option) {
	var ips []netip.Addr
	var used []Option
	for _, o := range c.opts[name] {
		if ip, err := netip.ParseAddr(strings.TrimSpace(o.Value)); err == nil && ip.Zone() == "" {
			ips, used = append(ips, ip.Unmap()), append(used, o)
		}
	}
	return ips, used
}
