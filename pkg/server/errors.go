package server

import "errors"

// errRecovered is returned by a callback that panicked and was recovered.
var errRecovered = errors.New("recovered from a panic")
