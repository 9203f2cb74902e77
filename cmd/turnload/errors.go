package main

import "errors"

// Sentinel errors; callers match them with errors.Is.
var (
	// errUsage means the command line was wrong; the message says how.
	errUsage = errors.New("usage")
	// errTimeout means a STUN transaction got no answer after every retransmission.
	errTimeout = errors.New("no response")
	// errRejected means the server answered a request with an error response.
	errRejected = errors.New("rejected")
	// errMalformed means a response could not be decoded or lacked a required attribute.
	errMalformed = errors.New("malformed response")
	// errNoClients means no client finished its setup, so there was nothing to measure.
	errNoClients = errors.New("no client could be set up")
)
