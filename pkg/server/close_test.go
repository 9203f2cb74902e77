package server_test

import (
	"testing"
)

func TestCloseEndsEveryAllocation(t *testing.T) {
	s := start(t, testOptions())
	peer := echoPeer(t)
	u := dial(t, s, "udp")
	u.MustAllocate()
	mustPermit(t, u, peer)
	mustEcho(t, u, peer, "udp")
	c := dial(t, s, "tcp")
	c.MustAllocate()
	waitCount(t, s.Registry(), 2)
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	waitCount(t, s.Registry(), 0)
}
