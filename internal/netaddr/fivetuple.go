package netaddr

import (
	"net"
	"net/netip"
)

// FiveTuple is a client's 5-tuple (RFC 8656 §2): the client's transport
// address, the server's, and the transport. Both addresses are unmapped
// (AddrPort). TCP covers TLS, which runs over it: a UDP client and a TCP
// client may share an address and port number (two users behind one
// carrier-grade NAT, which maps UDP and TCP separately), and are two
// 5-tuples. A table keyed by one side alone leaves the other zero.
type FiveTuple struct {
	Client, Server netip.AddrPort
	TCP            bool
}

// Of is the 5-tuple of client and server. Either may be nil (the zero
// address); the transport is client's, or server's when client is nil.
func Of(client, server net.Addr) FiveTuple {
	return FiveTuple{Client: AddrPort(client), Server: AddrPort(server), TCP: isTCP(client, server)}
}

func isTCP(client, server net.Addr) bool {
	a := client
	if a == nil {
		a = server
	}
	_, ok := a.(*net.TCPAddr)
	return ok
}
