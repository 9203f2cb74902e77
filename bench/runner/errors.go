package main

import "errors"

// Sentinel errors.
var (
	// errNotReady means a server did not answer a STUN Binding request in time.
	errNotReady = errors.New("server not ready")
	// errNoPort means no free loopback port was found.
	errNoPort = errors.New("no free port")
	// errParse means a tool's output lacked a figure the runner needs.
	errParse = errors.New("unexpected tool output")
)
