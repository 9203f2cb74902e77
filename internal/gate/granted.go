package gate

import (
	"net"
	"time"

	"github.com/turnd/turnd/internal/wire"
)

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
	if t := wire.Type(b); t != wire.TypeAllocateSuccess && t != wire.TypeRefreshSuccess {
		return
	}
	if secs, ok := wire.Lifetime(b); ok {
		g.hooks.Granted(client(), server(), time.Duration(secs)*time.Second)
	}
}
