package gate

import (
	"encoding/binary"
	"net"
	"time"
)

// typeRefreshSuccess is the Refresh success response (RFC 8656 §17).
const typeRefreshSuccess = 0x0104

// attrLifetime is the LIFETIME attribute (RFC 8656 §18.2).
const attrLifetime = 0x000D

// noteGranted tells the Granted hook the lifetime pion granted in an
// Allocate or Refresh success response to client on server, so that turnd
// knows when each allocation ends if nobody refreshes it.
//
// Hot path for everything pion sends to clients: a two-byte look for the
// rest.
func (g *Gate) noteGranted(b []byte, client, server func() net.Addr) {
	if len(b) < 20 || g.hooks.Granted == nil {
		return
	}
	if t := binary.BigEndian.Uint16(b); t != typeAllocateSuccess && t != typeRefreshSuccess {
		return
	}
	if secs, ok := lifetimeOf(b); ok {
		g.hooks.Granted(client(), server(), time.Duration(secs)*time.Second)
	}
}

// lifetimeOf reads the LIFETIME attribute of a STUN message, walking the
// attribute headers without decoding.
func lifetimeOf(b []byte) (uint32, bool) {
	end := min(len(b), 20+int(binary.BigEndian.Uint16(b[2:4])))
	for off := 20; off+4 <= end; {
		t, n := binary.BigEndian.Uint16(b[off:]), int(binary.BigEndian.Uint16(b[off+2:]))
		if t == attrLifetime && n == 4 && off+8 <= end {
			return binary.BigEndian.Uint32(b[off+4:]), true
		}
		off += 4 + (n+3)&^3
	}
	return 0, false
}
