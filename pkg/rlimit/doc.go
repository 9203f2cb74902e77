// Package rlimit raises the process's open-file limit and counts the file
// descriptors in use, so turnd can say at start-up how many allocations it
// can hold: every UDP allocation owns one relay socket, every TCP client one
// more for its connection.
//
// It knows nothing about TURN, configuration or logging; the caller decides
// what a refusal means.
package rlimit
