package coturnconf

import (
	"strings"

	"github.com/turnd/turnd/pkg/peerfilter"
)

// peers converts the peer address filter. coturn's entries are an IP or a
// "first-last" range, which turnd reads the same way; allowed wins over
// denied in both, and loopback is checked first in both.
func (c *converter) peers() {
	if o, on := c.flag("allow-loopback-peers"); on {
		c.cfg.Peers.AllowLoopback, c.why["peers.allow_loopback"] = true, src(o)
	}
	multicast, denyMulticast := c.flag("no-multicast-peers")
	if denyMulticast {
		c.note(multicast, "turnd always denies multicast peers (224.0.0.0/4, ff00::/8): the same as this option")
	} else {
		c.warnAll("no-multicast-peers", Warning, "not set: coturn relayed to multicast peers; turnd always denies "+
			"them (224.0.0.0/4, ff00::/8)")
	}
	allowed := c.entries("allowed-peer-ip", "peers.allowed", &c.cfg.Peers.Allowed)
	denied := c.entries("denied-peer-ip", "peers.denied", &c.cfg.Peers.Denied)
	// coturn puts the private half of an external-ip mapping on its allow
	// list, so that clients behind the same NAT reach each other.
	for _, m := range c.privates {
		r, _ := peerfilter.ParseEntry(m.private.String())
		if !inAny(r, allowed) {
			allowed = append(allowed, r)
			c.cfg.Peers.Allowed = append(c.cfg.Peers.Allowed, m.private.String())
			c.items["peers.allowed"] = append(c.items["peers.allowed"], "coturn allows the private half of "+src(m.o))
		}
	}
	c.newlyDenied(allowed, denied)
}

// entries converts one list and returns the ranges it carried over.
func (c *converter) entries(name, path string, dst *[]string) []peerfilter.Range {
	var out []peerfilter.Range
	builtin := peerfilter.BuiltinDenied()
	verb := "allow"
	if path == "peers.denied" {
		verb = "deny"
	}
	for _, o := range c.opts[name] {
		v := strings.TrimSpace(o.Value)
		r, err := peerfilter.ParseEntry(v)
		if err != nil {
			c.warn(o, `%q is not an IP address or first-last range; coturn logged "Wrong address format" and ignored `+
				"it; not carried over", v)
			continue
		}
		if strings.Contains(v, ":") && r.First().Is4() {
			// coturn compares a peer with a range of its own family only,
			// so this entry matched peers written as ::ffff:a.b.c.d alone.
			// turnd judges those by their IPv4 address, where the entry
			// would cover IPv4 peers too.
			c.warn(o, "an IPv4-mapped IPv6 entry: coturn matched it only against peers written as ::ffff:a.b.c.d, "+
				"but turnd judges those by their IPv4 address, so here it would %s IPv4 peers in %s; not carried "+
				"over (IPv4 entries already apply to mapped peers)", verb, r)
			continue
		}
		if inAny(r, out) {
			c.note(o, "%s is covered by an entry above", v)
			continue
		}
		why := src(o)
		if strings.Contains(v, "/") {
			c.warn(o, `coturn does not read CIDR notation: it logged "Wrong address format" and ignored this entry. `+
				"turnd applies it: make sure that is what you want")
		}
		if path == "peers.denied" && inAny(r, builtin) {
			why += "; also in turnd's built-in list"
		}
		*dst = append(*dst, v)
		c.items[path] = append(c.items[path], why)
		out = append(out, r)
	}
	return out
}

// newlyDenied notes the built-in ranges turnd denies that this coturn
// config did not: a peer there that worked through coturn is refused by
// turnd unless an allowed entry reopens it.
func (c *converter) newlyDenied(allowed, denied []peerfilter.Range) {
	var extra []string
	for _, b := range peerfilter.BuiltinDenied() {
		// Multicast is reported on its own (no-multicast-peers), loopback
		// follows allow-loopback-peers in both servers, and IPv4-mapped
		// peers are judged by their IPv4 address.
		f := b.First()
		if f.IsMulticast() || f.IsLoopback() || f.Is4In6() || inAny(b, denied) || inAny(b, allowed) {
			continue
		}
		extra = append(extra, b.String())
	}
	if len(extra) > 0 {
		c.warnAll("denied-peer-ip", Note, "turnd also denies these special-purpose ranges, which this config did not: %s. "+
			"Reopen one with allowed-peer-ip (peers.allowed) if clients relay to it", strings.Join(extra, ", "))
	}
}

// inAny reports whether some range in rs covers all of r.
func inAny(r peerfilter.Range, rs []peerfilter.Range) bool {
	for _, x := range rs {
		if x.First().BitLen() == r.First().BitLen() && x.First().Compare(r.First()) <= 0 && r.Last().Compare(x.Last()) <= 0 {
			return true
		}
	}
	return false
}
