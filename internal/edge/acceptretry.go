package edge

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// maxAcceptBackoff caps the wait between failed accepts.
const maxAcceptBackoff = time.Second

// acceptRaw accepts from the socket, trying again after an error that
// passes: out of descriptors (EMFILE, ENFILE) or buffers, an error here
// would end ServeStreams' accept loop, or a sorting port's, for good while /readyz
// still says 200. Any other error (a closed or shut-down listener) is
// returned, so the server reports the dead listener and turnd exits.
func (l *trackedListener) acceptRaw() (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil || !transientAcceptError(err) {
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

// transientAcceptError reports whether a failed accept may succeed later:
// a shortage of descriptors or memory, or a connection that went away
// before it was accepted.
func transientAcceptError(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.EPROTO, syscall.EINTR, syscall.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
