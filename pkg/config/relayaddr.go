package config

import "net/netip"

// RelayAddresses says, per IP family, where relay sockets bind and what
// clients are told in XOR-RELAYED-ADDRESS. A zero Bind means no relay of that
// family; a zero External means the bind address is advertised.
type RelayAddresses struct {
	Bind4, Bind6         netip.Addr
	External4, External6 netip.Addr
}

// ResolveRelay applies the one rule for relay addresses, which Validate and
// the server share. Per IP family, relay sockets bind to relay.address's
// address of that family, or else to the first listen address of that family
// (udp, tcp, tls, then tcp_tls) that is not a wildcard; they advertise
// relay.external_address's address of that family, or else the bind address.
// A family that binds to a wildcard needs an external address, and at least
// one family needs a bind address. Problems come back as a *ValidationError.
func (c Config) ResolveRelay() (RelayAddresses, error) {
	var v validator
	r := c.resolveRelay(&v)
	if len(v.problems) > 0 {
		return r, &ValidationError{Problems: v.problems}
	}
	return r, nil
}

// resolveRelay is ResolveRelay reporting to v, so Validate lists its problems
// with every other.
func (c Config) resolveRelay(v *validator) RelayAddresses {
	var r RelayAddresses
	binds, bindsOK := checkFamilies(v, "relay.address", c.Relay.Address, false)
	exts, extsOK := checkFamilies(v, "relay.external_address", c.Relay.ExternalAddress, true)
	for _, a := range binds {
		r.bind(a)
	}
	listens := 0
	for _, list := range [][]string{c.Listen.UDP, c.Listen.TCP, c.Listen.TLS, c.Listen.TCPTLS} {
		for _, s := range list {
			listens++
			// A wildcard listener says nothing about which address to relay from.
			if ap, msg := parseHostPort(s, 0); msg == "" && !ap.Addr().IsUnspecified() {
				r.bind(ap.Addr().Unmap())
			}
		}
	}
	for _, a := range exts {
		if a.Is4() {
			r.External4 = a
		} else {
			r.External6 = a
		}
	}
	if !bindsOK || !extsOK {
		return r
	}
	switch {
	case r.Bind4.IsValid() || r.Bind6.IsValid():
	case listens == 0:
		v.add("relay.address", "required when there is no listen address")
	default:
		v.add("relay.address", "required when every listen address is a wildcard")
	}
	// Relay sockets may bind to 0.0.0.0, but clients cannot be told to send
	// there: something must say which address of that family to advertise.
	for _, p := range []struct{ bind, ext netip.Addr }{{r.Bind4, r.External4}, {r.Bind6, r.External6}} {
		if p.bind.IsUnspecified() && !p.ext.IsValid() {
			v.add("relay.external_address", "required when relay.address is %s", p.bind)
		}
	}
	return r
}

// bind takes a as its family's bind address unless that family has one.
func (r *RelayAddresses) bind(a netip.Addr) {
	switch {
	case a.Is4() && !r.Bind4.IsValid():
		r.Bind4 = a
	case a.Is6() && !r.Bind6.IsValid():
		r.Bind6 = a
	}
}
