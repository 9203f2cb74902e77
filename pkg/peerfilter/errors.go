package peerfilter

import "errors"

// ErrInvalidEntry is wrapped by every error ParseEntry and New return for an
// entry that is not an IP address, a CIDR or a "first-last" range.
var ErrInvalidEntry = errors.New("invalid peer entry")
