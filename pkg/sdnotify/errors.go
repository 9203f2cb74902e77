package sdnotify

import "errors"

// ErrBadState is returned for a state that systemd would misread: an empty
// one, or a status text containing a newline (which would start a new
// assignment).
var ErrBadState = errors.New("invalid notification state")

// ErrUnsupportedSocket is returned by Notify when NOTIFY_SOCKET names a socket
// kind this package does not speak (systemd's vsock: addresses).
var ErrUnsupportedSocket = errors.New("unsupported NOTIFY_SOCKET address")

// ErrBarrierTimeout means systemd did not confirm a Barrier in time.
var ErrBarrierTimeout = errors.New("systemd did not answer the barrier in time")
