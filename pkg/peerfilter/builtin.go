package peerfilter

import "net/netip"

// builtinDenied is IANA's special-purpose address registry as Wire's coturn
// chart applied it after CVE-2020-26262, plus multicast, the IPv6 registry's
// entries that no WebRTC peer lives in, and the cloud metadata endpoints that
// sit inside the ULA space left open. RFC 1918 (10/8, 172.16/12,
// 192.168/16) and fd00::/8 ULA stay allowed on purpose: on-premise peers
// live there. 64:ff9b::/96, 2002::/16, ::ffff:0:0/96 and ::ffff:0:0:0/96 are
// denied as wholes; AllowedAddr additionally judges the IPv4 address embedded
// in NAT64, 6to4 and SIIT addresses, so allowing those prefixes does not
// reopen what they wrap. 64:ff9b:1::/48 places the IPv4 address where its
// operator chose (RFC 8215), so only the whole prefix can be judged.
// AS112 (2620:4f:8000::/48) stays allowed: it is ordinary global unicast.
var builtinDenied = [...]string{
	"0.0.0.0/8",              // "this network"
	"100.64.0.0/10",          // carrier-grade NAT shared space
	"127.0.0.0/8",            // loopback
	"169.254.0.0/16",         // link-local, cloud metadata (169.254.169.254)
	"192.0.0.0/24",           // IETF protocol assignments
	"192.0.2.0/24",           // TEST-NET-1
	"192.88.99.0/24",         // 6to4 relay anycast
	"198.18.0.0/15",          // benchmarking
	"198.51.100.0/24",        // TEST-NET-2
	"203.0.113.0/24",         // TEST-NET-3
	"224.0.0.0/4",            // multicast
	"240.0.0.0/4",            // reserved, up to and including 255.255.255.255 broadcast
	"::/128",                 // unspecified
	"::1/128",                // loopback
	"64:ff9b::/96",           // NAT64 well-known prefix
	"64:ff9b:1::/48",         // local-use NAT64 (RFC 8215): reaches the operator's IPv4 network
	"::ffff:0:0/96",          // IPv4-mapped (judged as IPv4; listed for completeness)
	"::ffff:0:0:0/96",        // SIIT IPv4-translated (RFC 7915): reaches the IPv4 address it carries
	"100::/64",               // discard-only
	"100:0:0:1::/64",         // dummy prefix (RFC 9780): never routed
	"2001::/23",              // IETF protocol assignments (Teredo, ORCHID, ...)
	"2001:db8::/32",          // documentation
	"2002::/16",              // 6to4
	"3fff::/20",              // documentation (RFC 9637)
	"5f00::/16",              // SRv6 segment identifiers (RFC 9602): a packet there runs a network function
	"fc00::/8",               // ULA half that is not locally assigned
	"fd00:ec2::254/128",      // AWS instance metadata
	"fd20:ce::254/128",       // Google Cloud metadata
	"fd00:c1::a9fe:a9fe/128", // Oracle Cloud instance metadata
	"fe80::/10",              // link-local
	"fec0::/10",              // site-local (deprecated by RFC 3879, still routed inside old networks)
	"ff00::/8",               // multicast
}

// BuiltinDenied returns the ranges every Filter denies unless an allowed
// entry reopens them. Each call returns a fresh slice.
func BuiltinDenied() []Range {
	out := make([]Range, len(builtinDenied))
	for i, s := range builtinDenied {
		// MustParsePrefix cannot fail on this constant list; a test parses it.
		out[i] = rangeOf(netip.MustParsePrefix(s))
	}
	return out
}
