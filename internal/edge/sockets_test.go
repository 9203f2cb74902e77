package edge_test

import (
	"errors"
	"testing"

	"github.com/turnd/turnd/internal/edge"
)

// TestBindCloseFreesAddresses: Bind opens a group per UDP address and locks
// it against a second Bind; Close frees every address for the next one.
func TestBindCloseFreesAddresses(t *testing.T) {
	s, err := edge.Bind(edge.Listen{UDP: []string{"127.0.0.1:0"}, Sockets: 2, TCP: []string{"127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	udp, tcp := s.UDPAddrs(), s.TCPAddrs()
	if len(s.UDP) != 2 || len(udp) != 1 || len(tcp) != 1 || len(s.TLSAddrs()) != 0 {
		t.Fatalf("%d UDP sockets on %v, TCP %v, TLS %v; want 2 on one address, one TCP, no TLS",
			len(s.UDP), udp, tcp, s.TLSAddrs())
	}
	again := edge.Listen{UDP: []string{udp[0].String()}, TCP: []string{tcp[0].String()}}
	if _, err := edge.Bind(again); !errors.Is(err, edge.ErrAddressServed) {
		t.Fatalf("second Bind on %v: %v, want ErrAddressServed", udp[0], err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2, err := edge.Bind(again)
	if err != nil {
		t.Fatalf("Bind after Close: %v, want the addresses free", err)
	}
	if err := s2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestBindTLSNeedsConfig: a TLS address without a TLS configuration is an
// error, not a listener serving plain TCP.
func TestBindTLSNeedsConfig(t *testing.T) {
	for _, l := range []edge.Listen{{TLS: []string{"127.0.0.1:0"}}, {TCPTLS: []string{"127.0.0.1:0"}}} {
		if s, err := edge.Bind(l); err == nil {
			_ = s.Close()
			t.Errorf("Bind(%+v) without TLSConfig succeeded", l)
		}
	}
}
