package main

import (
	"errors"
	"fmt"
)

// actorStopped is what the actor group returns: oklog/run reports only the
// first actor's error, and serve's exit code depends on which actor it was
// (the drain ending is a normal stop, anything else a failure).
type actorStopped struct {
	actor string
	err   error
}

func (s *actorStopped) Error() string { return fmt.Sprintf("%s stopped: %v", s.actor, s.err) }
func (s *actorStopped) Unwrap() error { return s.err }

// named makes execute report its actor's name, even when it returns nil.
func named(actor string, execute func() error) func() error {
	return func() error { return &actorStopped{actor: actor, err: execute()} }
}

// firstStopped unpacks the group's result into the actor that returned
// first and that actor's own error.
func firstStopped(err error) (actor string, cause error) {
	var s *actorStopped
	if errors.As(err, &s) {
		return s.actor, s.err
	}
	return "", err
}
