package edge

import "errors"

var (
	// ErrBadFraming means a TCP/TLS stream carried bytes that are neither a
	// STUN message nor ChannelData; the connection cannot be resynchronised.
	ErrBadFraming = errors.New("stream is not STUN or ChannelData")

	// ErrAddressServed means another turnd already serves a UDP address this
	// one was told to listen on.
	ErrAddressServed = errors.New("another turnd already serves this address")

	// errClosedBeforeFirstByte: the client hung up without a byte.
	errClosedBeforeFirstByte = errors.New("closed before the first byte")
	// errNotProxyHeader: the bytes do not start with either header's signature.
	errNotProxyHeader = errors.New("not a proxy protocol header")
)

// ErrStreamBusy means a stream client's outbox had no room for a message:
// the client is not reading what it is sent, and the message is dropped.
var ErrStreamBusy = errors.New("client connection busy: message dropped")

// Errors of Pause, Export and Release.
var (
	// ErrPaused: Pause while paused.
	ErrPaused = errors.New("edge paused")
	// ErrNotPaused: Export without a Pause that succeeded, or Release
	// outside the Pause its Export was made in.
	ErrNotPaused = errors.New("edge not paused")
	// ErrStopping: Pause after Stop.
	ErrStopping = errors.New("edge stopping")
)

// ErrBadExport means a description names a descriptor that is missing, or
// one that is not what it says, or Release was given another edge's Export.
var ErrBadExport = errors.New("export does not match its descriptors")
