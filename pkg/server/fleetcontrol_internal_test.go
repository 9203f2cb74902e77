package server

import (
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/turnd/turnd/pkg/config"
)

// TestAdvertisedURIs: specific listening addresses as they are, wildcards
// left out unless relay.external_address names the family's public address.
func TestAdvertisedURIs(t *testing.T) {
	udp := func(s string) net.Addr { return net.UDPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	got := advertisedURIs([]net.Addr{udp("10.0.0.5:3478"), udp("[::]:3478")}, []net.Addr{tcp("0.0.0.0:3478")},
		[]net.Addr{tcp("10.0.0.5:5349")}, config.RelayAddresses{})
	want := []string{"turn:10.0.0.5:3478?transport=udp", "turns:10.0.0.5:5349?transport=tcp"}
	if !slices.Equal(got, want) {
		t.Errorf("no external address: %q, want %q", got, want)
	}
	got = advertisedURIs([]net.Addr{udp("0.0.0.0:3478")}, []net.Addr{tcp("10.0.0.5:3478")}, nil,
		config.RelayAddresses{External4: netip.MustParseAddr("192.0.2.1")})
	want = []string{"turn:192.0.2.1:3478?transport=udp", "turn:192.0.2.1:3478?transport=tcp"}
	if !slices.Equal(got, want) {
		t.Errorf("behind NAT: %q, want %q", got, want)
	}
}

// TestAlternateOf: a node's 300 address is its first UDP turn: URI's.
func TestAlternateOf(t *testing.T) {
	e, ok := alternateOf([]string{"turns:turn.example.org:5349", "bad", "turn:192.0.2.7:3478?transport=udp"})
	if !ok || e.ip != netip.MustParseAddr("192.0.2.7") || e.port != 3478 {
		t.Errorf("alternateOf = %+v, %v", e, ok)
	}
	e, ok = alternateOf([]string{"turns:turn.example.org:5349", "turn:turn.example.org:3479?transport=tcp"})
	if !ok || e.host != "turn.example.org" || e.ip.IsValid() || e.port != 3479 {
		t.Errorf("turns: and turn: over TCP: %+v, %v", e, ok)
	}
	if _, ok := alternateOf([]string{"turns:turn.example.org:5349"}); ok {
		t.Error("only turns:, an alternate")
	}
	if _, ok := alternateOf(nil); ok {
		t.Error("no URIs, an alternate")
	}
}
