package rlimit

import "errors"

// ErrNoFDTable means the process's descriptor table could not be listed
// (no /proc, as in some sandboxes).
var ErrNoFDTable = errors.New("cannot list open file descriptors")
