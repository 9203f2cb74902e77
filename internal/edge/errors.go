package edge

import "errors"

var (
	// ErrBadFraming means a TCP/TLS stream carried bytes that are neither a
	// STUN message nor ChannelData; the connection cannot be resynchronised.
	ErrBadFraming = errors.New("stream is not STUN or ChannelData")
)
