package server_test

import (
	"errors"
	"testing"

	"github.com/turnd/turnd/pkg/server"
)

// TestSecondServerOnSameUDPAddress: SO_REUSEPORT would let a second server
// join the first one's UDP group silently; the address lock refuses it,
// while the first server's own group of several sockets binds, and the
// address is free again once the first server has closed.
func TestSecondServerOnSameUDPAddress(t *testing.T) {
	cfg := testConfig()
	cfg.Listen.TCP = nil
	cfg.Listen.UDPSockets = 3 // the server's own group joins
	first := start(t, server.Options{Config: cfg})
	addr := first.UDPAddrs()[0].String()

	again := cfg
	again.Listen.UDP = []string{addr}
	s, err := server.New(server.Options{Config: again})
	if err == nil {
		_ = s.Close()
		t.Fatalf("a second server started on %s", addr)
	}
	if !errors.Is(err, server.ErrAddressServed) {
		t.Fatalf("second server: %v, want ErrAddressServed", err)
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = server.New(server.Options{Config: again})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
