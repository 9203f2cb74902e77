package edge

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/turnd/turnd/internal/netaddr"
)

// proxyPolicy decides, per connection on a port behind a PROXY-protocol
// proxy, whether it may carry a header and must, and reads it.
type proxyPolicy struct {
	trusted []netip.Prefix
	refused func(reason string, from net.Addr)
}

func (p *proxyPolicy) trusts(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip := netaddr.IP(ta)
	for _, prefix := range p.trusted {
		if prefix.Contains(ip) {
			return true
		}
	}
	return false
}

// admit returns c as turnd must see it (with the client's address a trusted
// proxy announced), or closes it and returns false. A client that sends
// nothing, or hangs up, is closed without a count: that is no proxy's fault.
func (p *proxyPolicy) admit(c net.Conn) (net.Conn, bool) {
	from := c.RemoteAddr()
	b, err := peekFirstByte(c, firstByteTimeout)
	if err != nil {
		_ = c.Close()
		return nil, false
	}
	refuse := func(reason string) (net.Conn, bool) {
		p.refused(reason, from)
		_ = c.Close()
		return nil, false
	}
	header := startsProxyHeader(b)
	if !p.trusts(from) {
		if header {
			// Believing it would let any client pick the address that
			// per-IP limits and logs see.
			return refuse(ProxyUntrusted)
		}
		return c, true
	}
	if !header {
		return refuse(ProxyMissing)
	}
	if err := c.SetReadDeadline(time.Now().Add(firstByteTimeout)); err != nil {
		_ = c.Close()
		return nil, false
	}
	h, err := readProxyHeader(c)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return refuse(ProxyTimeout)
		}
		return refuse(ProxyMalformed)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		_ = c.Close()
		return nil, false
	}
	if client, ok := clientOf(h); ok {
		return &proxiedConn{Conn: c, client: client}, true
	}
	return c, true
}

// proxiedConn is a connection from a proxy, seen as the client it carries.
type proxiedConn struct {
	net.Conn
	client *net.TCPAddr
}

// RemoteAddr returns the client's address from the PROXY header; turnd
// uses it everywhere it uses a client's address (5-tuple, XOR-MAPPED-ADDRESS,
// per-IP limits, logs, /status). It is the stored object, as with
// net.TCPConn: asking it costs no allocation.
func (c *proxiedConn) RemoteAddr() net.Addr { return c.client }

// SyscallConn exposes the socket for the raw fast path, as trackedConn does.
func (c *proxiedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, fmt.Errorf("raw access to %T: %w", c.Conn, errors.ErrUnsupported)
}
