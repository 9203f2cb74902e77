package handover

import "errors"

var (
	// ErrInUse is Listen's error when a process answers on the socket.
	ErrInUse = errors.New("hand-over socket in use")
	// ErrRefused wraps the reason the old process refused a take-over.
	ErrRefused = errors.New("hand-over refused")
	// ErrFailed wraps the reason the other side gave for failing (a
	// successor that could not serve, an upgrade that did not happen).
	ErrFailed = errors.New("hand-over failed")
	// ErrClosed is the error when the peer closes the connection where a
	// message was due.
	ErrClosed = errors.New("hand-over peer closed the connection")
)
