package server_test

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"

	"github.com/turnd/turnd/internal/testturn"
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

// TestSecondServerOnOverlappingUDPAddress: the lock is named after the
// literal address, so a second server on 127.0.0.1:P while the first
// serves 0.0.0.0:P (or the other way round) took another lock, and
// SO_REUSEPORT let it bind and take the loopback clients; it is refused
// with the kernel's "address already in use".
// Nothing is sent: the wildcard sockets are bound only.
func TestSecondServerOnOverlappingUDPAddress(t *testing.T) {
	for _, tc := range []struct{ first, second string }{
		{"0.0.0.0", "127.0.0.1"},
		{"127.0.0.1", "0.0.0.0"},
	} {
		t.Run(tc.first+" then "+tc.second, func(t *testing.T) {
			port := strconv.Itoa(testturn.FreePort(t))
			cfg := testConfig()
			cfg.Listen.TCP = nil
			cfg.Listen.UDPSockets = 2
			cfg.Relay.Address = "127.0.0.1"
			cfg.Listen.UDP = []string{net.JoinHostPort(tc.first, port)}
			start(t, server.Options{Config: cfg})

			cfg.Listen.UDP = []string{net.JoinHostPort(tc.second, port)}
			s, err := server.New(server.Options{Config: cfg})
			if err == nil {
				_ = s.Close()
				t.Fatalf("a second server started on %s while the first serves %s", cfg.Listen.UDP[0], tc.first)
			}
			if !errors.Is(err, syscall.EADDRINUSE) {
				t.Fatalf("second server: %v, want EADDRINUSE", err)
			}
		})
	}
}
