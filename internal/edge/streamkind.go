package edge

import (
	"crypto/tls"
	"net"
)

// StreamTLS reports whether the stream client at client, on the listener at
// server, speaks TLS. The listening port alone cannot tell: a shared port
// (listen.tcp_tls) serves both on one address.
func (e *Edge) StreamTLS(client, server net.Addr) bool {
	c, ok := e.streams.get(client, server)
	if !ok {
		return false
	}
	_, isTLS := c.Conn.(*tls.Conn)
	return isTLS
}
