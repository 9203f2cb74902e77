package testproxy

import (
	"net"
	"testing"

	"github.com/pires/go-proxyproto"
)

// PROXY starts a proxy that forwards every connection to target, first
// announcing the client's address with a PROXY protocol header of the given
// version (1 or 2), as HAProxy's send-proxy(-v2) does. It dials target from
// 127.0.0.1, so turnd sees the proxy there. It returns the proxy's address.
func PROXY(t testing.TB, target string, version byte) string {
	t.Helper()
	return serve(t, func(c net.Conn) {
		b, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			return
		}
		h := proxyproto.HeaderProxyFromAddrs(version, c.RemoteAddr(), c.LocalAddr())
		if _, err := h.WriteTo(b); err != nil {
			_ = b.Close()
			_ = c.Close()
			return
		}
		splice(c, b)
	})
}
