package main

import (
	"errors"
	"testing"

	oklog "github.com/oklog/run"
)

// TestGroupReportsFirstActor checks what serve's exit code rests on: the
// group names the actor that returned first, also when its error is nil
// (the drain), and every other actor is interrupted.
func TestGroupReportsFirstActor(t *testing.T) {
	boom := errors.New("listener died")
	for _, tc := range []struct {
		first string
		err   error
	}{{"drain", nil}, {"turn", boom}} {
		t.Run(tc.first, func(t *testing.T) {
			var g oklog.Group
			stop := make(chan struct{})
			interrupted := 0
			g.Add(named("blocker", func() error { <-stop; return nil }), func(error) { interrupted++; close(stop) })
			g.Add(named(tc.first, func() error { return tc.err }), func(error) { interrupted++ })
			actor, err := firstStopped(g.Run())
			if actor != tc.first || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("first stopped = %q, %v; want %q, %v", actor, err, tc.first, tc.err)
			}
			if interrupted != 2 {
				t.Fatalf("%d actors interrupted, want 2", interrupted)
			}
		})
	}
}

func TestFirstStoppedWithoutName(t *testing.T) {
	boom := errors.New("boom")
	if actor, err := firstStopped(boom); actor != "" || err != boom {
		t.Fatalf("got %q, %v", actor, err)
	}
}
