package server

import "errors"

var (
	// ErrAddressServed means another turnd already serves a UDP address this
	// one was told to listen on.
	ErrAddressServed = errors.New("another turnd already serves this address")

	// errRecovered is returned by a callback that panicked and was recovered.
	errRecovered = errors.New("recovered from a panic")
	// errClosedBeforeFirstByte: the client hung up without a byte.
	errClosedBeforeFirstByte = errors.New("closed before the first byte")
	// errNotProxyHeader: the bytes do not start with either header's signature.
	errNotProxyHeader = errors.New("not a proxy protocol header")
)
