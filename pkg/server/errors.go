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

// ErrNoFleet is the answer of a fleet-wide call on a server without
// fleet, or before its fleet client is open.
var ErrNoFleet = errors.New("no fleet")

// ErrNoNodes is the credentials endpoint's answer when no node of the
// fleet is ready to take clients.
var ErrNoNodes = errors.New("no ready node in the fleet")

// ErrBadUser is the credentials endpoint's answer to a user name that no
// REST username can carry.
var ErrBadUser = errors.New("bad user name")
