package server

import (
	"errors"
	"net"
	"time"
)

// maxAcceptBackoff caps the wait between failed accepts.
const maxAcceptBackoff = time.Second

// acceptRaw accepts from the socket, trying again after any error but a
// closed listener's: out of descriptors (EMFILE, ENFILE) or buffers, an
// error here would end pion's accept loop, or an edge port's, for good
// while /readyz still says 200.
func (l *trackedListener) acceptRaw() (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil || errors.Is(err, net.ErrClosed) {
			return c, err
		}
		backoff = nextAcceptBackoff(backoff)
		time.Sleep(backoff) // the descriptor shortage has no event to wait for
	}
}

// nextAcceptBackoff doubles the wait from 5 ms up to maxAcceptBackoff, as
// net/http's server does, so the loop does not spin while accepts fail.
func nextAcceptBackoff(prev time.Duration) time.Duration {
	return min(max(2*prev, 5*time.Millisecond), maxAcceptBackoff)
}
