package edge

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"

	"github.com/pires/go-proxyproto"

	"github.com/turnd/turnd/internal/netaddr"
)

// Reasons a stream connection is closed at the PROXY protocol step, as
// Proxy.Refused hears them.
const (
	ProxyUntrusted = "untrusted" // a header from a source not in listen.proxy_protocol.trusted
	ProxyMissing   = "missing"   // a trusted proxy's connection that does not start with a header
	ProxyMalformed = "malformed" // a header that does not parse
	ProxyTimeout   = "timeout"   // no complete header in time
)

// v2Signature starts every PROXY protocol v2 header; "PROXY " starts v1.
const v2Signature = "\r\n\r\n\x00\r\nQUIT\n"

// maxV1Header is the longest v1 header line, CRLF included (the spec's 107).
const maxV1Header = 107

// startsProxyHeader reports whether b can be the first byte of a PROXY
// protocol header. No TLS record ('\x16'), STUN message or ChannelData
// starts with 'P' or '\r', so one byte tells a header from a direct client.
func startsProxyHeader(b byte) bool { return b == 'P' || b == '\r' }

// readProxyHeader reads one PROXY protocol v1 or v2 header from r and not a
// byte more: what follows reaches the reader (and for plain TCP the raw fast
// path, which reads the socket itself) untouched. v1 is read a byte at a
// time for that reason; it happens once per connection, never per packet.
func readProxyHeader(r io.Reader) (*proxyproto.Header, error) {
	var first [1]byte
	if _, err := io.ReadFull(r, first[:]); err != nil {
		return nil, fmt.Errorf("read proxy header: %w", err)
	}
	var raw []byte
	switch first[0] {
	case '\r':
		hdr := make([]byte, 16)
		hdr[0] = first[0]
		if _, err := io.ReadFull(r, hdr[1:]); err != nil {
			return nil, fmt.Errorf("read proxy v2 header: %w", err)
		}
		if string(hdr[:12]) != v2Signature {
			return nil, errNotProxyHeader
		}
		rest := make([]byte, binary.BigEndian.Uint16(hdr[14:16]))
		if _, err := io.ReadFull(r, rest); err != nil {
			return nil, fmt.Errorf("read proxy v2 addresses: %w", err)
		}
		raw = append(hdr, rest...)
	case 'P':
		raw = append(make([]byte, 0, maxV1Header), first[0])
		for !bytes.HasSuffix(raw, []byte("\r\n")) {
			if len(raw) == maxV1Header {
				return nil, proxyproto.ErrVersion1HeaderTooLong
			}
			var b [1]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return nil, fmt.Errorf("read proxy v1 header: %w", err)
			}
			raw = append(raw, b[0])
		}
	default:
		return nil, errNotProxyHeader
	}
	h, err := proxyproto.Read(bufio.NewReaderSize(bytes.NewReader(raw), len(raw)+16))
	if err != nil {
		return nil, fmt.Errorf("parse proxy header: %w", err)
	}
	return h, nil
}

// clientOf returns the client's address a header announces, or ok false
// when it announces none (a LOCAL command, as proxies send for their own
// health checks, or an UNKNOWN/UNSPEC family): then the connection's own
// address stands.
func clientOf(h *proxyproto.Header) (*net.TCPAddr, bool) {
	if h.Command != proxyproto.PROXY {
		return nil, false
	}
	src, _, ok := h.TCPAddrs()
	if !ok {
		return nil, false
	}
	return net.TCPAddrFromAddrPort(netaddr.AddrPort(src)), true
}
