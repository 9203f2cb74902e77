package server

import (
	"errors"

	"github.com/turnd/turnd/internal/edge"
)

var (
	// ErrAddressServed means another turnd already serves a UDP address this
	// one was told to listen on.
	ErrAddressServed = edge.ErrAddressServed

	// ErrStateVersion means a predecessor's state written by a binary of
	// another version (Options.Inherit).
	ErrStateVersion = errors.New("unknown server state version")

	// errRecovered is returned by a callback that panicked and was recovered.
	errRecovered = errors.New("recovered from a panic")
)
