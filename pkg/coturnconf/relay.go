package coturnconf

import (
	"net/netip"
	"strings"
)

// mapping is an external-ip given as "public/private".
type mapping struct {
	public, private netip.Addr
	o               Option
}

// relay converts relay-ip, external-ip, the port range and the relay kinds.
// turnd relays from one address and advertises one external address, where
// coturn may have several of each; what is left out is reported.
func (c *converter) relay() {
	relays, relayOpts := c.addrs("relay-ip")
	var relay netip.Addr
	switch {
	case len(relays) > 0:
		relay, c.why["relay.address"] = relays[0], src(relayOpts[0])
		for i, o := range relayOpts[1:] {
			msg := "turnd relays from one address, " + relay.String() + "; this one is not carried over"
			if relays[i+1].Is4() != relay.Is4() {
				msg += ", so allocations asking for its address family are refused (440)"
			}
			c.warn(o, "%s", msg)
		}
	default:
		listens, listenOpts := c.quietAddrs("listening-ip")
		if len(listens) > 0 {
			relay = listens[0]
			c.why["relay.address"] = "relay-ip not set: coturn relays from the listening address, " + src(listenOpts[0])
			if len(listens) > 1 {
				c.warnAll("relay-ip", Warning, "not set: coturn relayed from whichever listening address a client used; "+
					"turnd relays every allocation from the first, %s", relay)
			}
		}
	}

	plain, mappings := c.externals()
	switch {
	case relay.IsValid():
		c.external(relay, plain, mappings)
	case len(mappings) > 0:
		m := mappings[0]
		relay = m.private
		c.why["relay.address"] = "relay-ip not set: the private half of " + src(m.o)
		c.external(relay, plain, mappings)
	case plain != nil:
		relay = netip.IPv4Unspecified()
		if plain.public.Is6() {
			relay = netip.IPv6Unspecified()
		}
		c.why["relay.address"] = "relay-ip not set: coturn relayed from the machine's addresses; turnd binds every one"
		c.external(relay, plain, nil)
	default:
		c.warnAll("relay-ip", Warning, "no relay-ip, listening-ip or external-ip: coturn relayed from each address of "+
			"the machine, but turnd needs the one address to give clients. Add relay-ip=ADDRESS (or external-ip=PUBLIC) "+
			"to the coturn config, or after -- on the import-coturn command line")
	}
	if relay.IsValid() {
		c.cfg.Relay.Address = relay.String()
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

// external picks the external address for relay: the mapping of that
// address, else the plain external-ip if it applies to it as in coturn (same
// family, not loopback).
func (c *converter) external(relay netip.Addr, plain *mapping, mappings []mapping) {
	chosen := false
	for _, m := range mappings {
		switch {
		case m.private == relay && !chosen:
			c.cfg.Relay.ExternalAddress, c.why["relay.external_address"] = m.public.String(), src(m.o)
			chosen = true
		default:
			c.warn(m.o, "maps %s, which is not turnd's relay address %s; not carried over (turnd advertises one address)",
				m.private, relay)
		}
	}
	if plain == nil {
		return
	}
	switch {
	case chosen:
		c.warn(plain.o, "the mapping of the relay address takes precedence; not carried over")
	case relay.Is4() != plain.public.Is4():
		c.warn(plain.o, "coturn applies it to relay addresses of the same family only, and the relay address %s is not; "+
			"not carried over", relay)
	case relay.IsLoopback():
		c.warn(plain.o, "coturn does not apply it to the loopback relay address %s; not carried over", relay)
	default:
		c.cfg.Relay.ExternalAddress, c.why["relay.external_address"] = plain.public.String(), src(plain.o)
	}
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
