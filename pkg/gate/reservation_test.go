package gate_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/pkg/gate"
)

// allocateSuccess is what pion answers to an Allocate with EVEN-PORT R=1:
// the relayed address and, when tok is set, the RESERVATION-TOKEN for the
// next port.
func allocateSuccess(tb testing.TB, relayed *net.UDPAddr, tok []byte) []byte {
	tb.Helper()
	setters := []stun.Setter{
		stun.TransactionID,
		stun.NewType(stun.MethodAllocate, stun.ClassSuccessResponse),
		xorAddr{stun.AttrXORRelayedAddress, relayed.IP, relayed.Port},
		xorAddr{stun.AttrXORMappedAddress, net.IPv4(127, 0, 0, 1), 50000},
	}
	if tok != nil {
		setters = append(setters, reservationToken(tok))
	}
	setters = append(setters, lifetime(10*time.Minute), stun.MessageIntegrity(aliceKey()), stun.Fingerprint)
	m, err := stun.Build(setters...)
	if err != nil {
		tb.Fatalf("build allocate success: %v", err)
	}
	return m.Raw
}

// reservationRig is a socket group of two UDP sockets sharing one gate, as
// turnd runs a SO_REUSEPORT group, and a client.
type reservationRig struct {
	first, second   net.PacketConn // gate wrappers pion reads and writes through
	hint1, hint2    *gate.PortHint
	server2, client *net.UDPConn
}

func newReservationRig(t *testing.T) *reservationRig {
	g := gate.New(&gate.Policy{Keys: staticKeys()}, gate.Hooks{})
	s1, s2 := listenUDP(t), listenUDP(t)
	r := &reservationRig{hint1: new(gate.PortHint), hint2: new(gate.PortHint), server2: s2, client: listenUDP(t)}
	r.first = mustPacketConn(t, s1, g, r.hint1, nil)
	r.second = mustPacketConn(t, s2, g, r.hint2, nil)
	return r
}

// reserve has the first socket send pion's success response carrying tok.
func (r *reservationRig) reserve(t *testing.T, relayed *net.UDPAddr, tok []byte) {
	t.Helper()
	resp := allocateSuccess(t, relayed, tok)
	if _, err := r.first.WriteTo(resp, r.client.LocalAddr()); err != nil {
		t.Fatalf("write response: %v", err)
	}
	if got, _ := readPacket(t, r.client); !bytes.Equal(got, resp) {
		t.Fatalf("client got %x, want the response unchanged", got)
	}
}

// allocateOnSecond sends a token Allocate to the second socket and returns
// what pion reads there.
func (r *reservationRig) allocateOnSecond(t *testing.T, tok []byte) (sent, read []byte) {
	t.Helper()
	sent = aliceAllocate(t, reservationToken(tok))
	sendUDP(t, r.client, r.server2.LocalAddr(), sent)
	read, _ = readPacket(t, r.second)
	return sent, read
}

// TestReservationAcrossSockets checks RFC 8656 §7.2's reservation tokens in a
// socket group: a token issued on one socket turns an Allocate read on another
// into a plain Allocate plus a port hint of the reserved port.
func TestReservationAcrossSockets(t *testing.T) {
	tests := []struct {
		name    string
		relayed *net.UDPAddr
	}{
		{"IPv4 relay", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 49200}},
		{"IPv6 relay", &net.UDPAddr{IP: net.ParseIP("2001:db8::1"), Port: 60000}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newReservationRig(t)
			tok := []byte("TOKEN-01")
			r.reserve(t, tc.relayed, tok)

			sent, read := r.allocateOnSecond(t, tok)
			m := decode(t, read)
			if m.Contains(stun.AttrReservationToken) {
				t.Error("pion still sees RESERVATION-TOKEN")
			}
			checkSigned(t, m, aliceKey())
			if in := decode(t, sent); m.TransactionID != in.TransactionID || len(m.Attributes) != len(in.Attributes)-1 {
				t.Errorf("rewritten %v from %v", m, in)
			}
			if got := r.hint2.Take(); got != tc.relayed.Port+1 {
				t.Errorf("hint = %d, want %d", got, tc.relayed.Port+1)
			}
			if got := r.hint2.Take(); got != 0 {
				t.Errorf("second Take = %d, want 0", got)
			}
			if got := r.hint1.Take(); got != 0 {
				t.Errorf("the other socket's hint = %d, want 0", got)
			}

			// A token is good for one Allocate: the retry goes to pion (508).
			sent, read = r.allocateOnSecond(t, tok)
			if !bytes.Equal(read, sent) || r.hint2.Take() != 0 {
				t.Error("a used token was honoured again")
			}
		})
	}
}

// TestReservationNotHonoured lists tokens the gate leaves to pion.
func TestReservationNotHonoured(t *testing.T) {
	relayed := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 49200}
	tests := []struct {
		name     string
		response []byte // what pion sent earlier (nil: nothing)
	}{
		{"unknown token", nil},
		{"token in a response without XOR-RELAYED-ADDRESS", func() []byte {
			m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassSuccessResponse),
				reservationToken([]byte("TOKEN-01")), stun.Fingerprint)
			if err != nil {
				t.Fatal(err)
			}
			return m.Raw
		}()},
		{"token in an error response", func() []byte {
			m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassErrorResponse),
				stun.CodeInsufficientCapacity, xorAddr{stun.AttrXORRelayedAddress, relayed.IP, relayed.Port},
				reservationToken([]byte("TOKEN-01")))
			if err != nil {
				t.Fatal(err)
			}
			return m.Raw
		}()},
		{"another token", allocateSuccess(t, relayed, []byte("TOKEN-99"))},
		{"ChannelData", channelData([]byte("TOKEN-01"), false)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newReservationRig(t)
			if tc.response != nil {
				if _, err := r.first.WriteTo(tc.response, r.client.LocalAddr()); err != nil {
					t.Fatal(err)
				}
				readPacket(t, r.client)
			}
			sent, read := r.allocateOnSecond(t, []byte("TOKEN-01"))
			if !bytes.Equal(read, sent) {
				t.Errorf("pion read %x, want the Allocate unchanged", read)
			}
			if got := r.hint2.Take(); got != 0 {
				t.Errorf("hint = %d, want 0", got)
			}
		})
	}
}

// TestReservationHintClearedOnNextRead: pion consumes the hint while it
// handles the packet; a hint it did not take must not leak to the next one.
func TestReservationHintClearedOnNextRead(t *testing.T) {
	r := newReservationRig(t)
	r.reserve(t, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 49200}, []byte("TOKEN-01"))
	r.allocateOnSecond(t, []byte("TOKEN-01"))
	sendUDP(t, r.client, r.server2.LocalAddr(), channelData([]byte("x"), false))
	readPacket(t, r.second)
	if got := r.hint2.Take(); got != 0 {
		t.Errorf("hint after the next read = %d, want 0", got)
	}
}

// TestPortHintNil: pion's stream listeners get a nil hint.
func TestPortHintNil(t *testing.T) {
	var h *gate.PortHint
	if got := h.Take(); got != 0 {
		t.Errorf("nil hint Take = %d", got)
	}
}
