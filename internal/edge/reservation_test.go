package edge_test

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/gate"
)

// allocateSuccess is what pion answers to an Allocate with EVEN-PORT R=1:
// the relayed address and, when tok is set, the RESERVATION-TOKEN for the
// next port.
func allocateSuccess(tb testing.TB, relayed *net.UDPAddr, tok []byte) []byte {
	tb.Helper()
	setters := []stun.Setter{
		stun.TransactionID,
		stun.NewType(stun.MethodAllocate, stun.ClassSuccessResponse),
		xorAddr(stun.AttrXORRelayedAddress, relayed.IP, relayed.Port),
		xorAddr(stun.AttrXORMappedAddress, net.IPv4(127, 0, 0, 1), 50000),
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
	hint1, hint2    *edge.PortHint
	server2, client *net.UDPConn
}

func newReservationRig(t *testing.T) *reservationRig {
	g := gate.New(&gate.Policy{Keys: staticKeys()}, gate.Hooks{})
	s1, s2 := listenUDP(t), listenUDP(t)
	r := &reservationRig{hint1: new(edge.PortHint), hint2: new(edge.PortHint), server2: s2, client: listenUDP(t)}
	e := edge.New(g, nil)
	r.first = mustPacketConn(t, s1, e, r.hint1, nil)
	r.second = mustPacketConn(t, s2, e, r.hint2, nil)
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
				stun.CodeInsufficientCapacity, xorAddr(stun.AttrXORRelayedAddress, relayed.IP, relayed.Port),
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
	var h *edge.PortHint
	if got := h.Take(); got != 0 {
		t.Errorf("nil hint Take = %d", got)
	}
}

func evenPortAttr(r bool) stun.Setter {
	v := byte(0)
	if r {
		v = 0x80
	}
	return stun.RawAttribute{Type: stun.AttrEvenPort, Value: []byte{v}}
}

func addressFamily(v6 bool) stun.Setter {
	v := byte(0x01)
	if v6 {
		v = 0x02
	}
	return stun.RawAttribute{Type: stun.AttrRequestedAddressFamily, Value: []byte{v, 0, 0, 0}}
}

// TestReservationTokenConflictsAre400: RFC 8656 §7.2 step 5 — a
// RESERVATION-TOKEN together with EVEN-PORT, or with
// REQUESTED-ADDRESS-FAMILY (RFC 6156 §4.2), is 400, signed; the token
// stays good for a proper Allocate.
func TestReservationTokenConflictsAre400(t *testing.T) {
	for _, extra := range []struct {
		name string
		attr stun.Setter
	}{{"EVEN-PORT", evenPortAttr(false)}, {"EVEN-PORT R", evenPortAttr(true)}, {"REQUESTED-ADDRESS-FAMILY", addressFamily(false)}} {
		t.Run(extra.name, func(t *testing.T) {
			r := newReservationRig(t)
			relayed := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 49200}
			tok := []byte("TOKEN-01")
			r.reserve(t, relayed, tok)
			sendUDP(t, r.client, r.server2.LocalAddr(), aliceAllocate(t, reservationToken(tok), extra.attr), marker(t))
			if read, _ := readPacket(t, r.second); !bytes.Equal(read[:2], []byte{0, 1}) {
				t.Fatalf("pion read %x, want only the marker Binding", read)
			}
			got, _ := readPacket(t, r.client)
			m := decode(t, got)
			if code := errorCode(t, m); code != stun.CodeBadRequest {
				t.Fatalf("answer %v, want 400", code)
			}
			checkSigned(t, m, aliceKey())
			if _, read := r.allocateOnSecond(t, tok); decode(t, read).Contains(stun.AttrReservationToken) || r.hint2.Take() != relayed.Port+1 {
				t.Fatal("the token did not survive the refused request")
			}
		})
	}
}

// TestEvenPortWithoutReservation: EVEN-PORT with R=0 asks for an even port
// and nothing more. pion would answer with a RESERVATION-TOKEN, so the gate
// hides the attribute and hints the generator to pick an even port.
func TestEvenPortWithoutReservation(t *testing.T) {
	r := newReservationRig(t)
	sent := aliceAllocate(t, evenPortAttr(false))
	sendUDP(t, r.client, r.server2.LocalAddr(), sent)
	read, _ := readPacket(t, r.second)
	m := decode(t, read)
	if m.Contains(stun.AttrEvenPort) {
		t.Fatal("pion still sees EVEN-PORT")
	}
	checkSigned(t, m, aliceKey())
	if len(m.Attributes) != len(decode(t, sent).Attributes)-1 {
		t.Fatalf("rewritten %v from %v", m, decode(t, sent))
	}
	if !r.hint2.TakeEven() || r.hint2.TakeReserve() || r.hint2.Take() != 0 {
		t.Fatal("hint: want an even port, no pair, no port")
	}

	sendUDP(t, r.client, r.server2.LocalAddr(), aliceAllocate(t, evenPortAttr(true)))
	read, _ = readPacket(t, r.second)
	if !decode(t, read).Contains(stun.AttrEvenPort) || !r.hint2.TakeReserve() || r.hint2.TakeEven() {
		t.Fatal("EVEN-PORT with R: want it passed on with a pair hint")
	}
}

// TestReservationsPerUserCapped: a user holding maxReservationsPerUser
// live tokens gets 486 for one more EVEN-PORT reservation; using a token
// frees a place.
func TestReservationsPerUserCapped(t *testing.T) {
	r := newReservationRig(t)
	first := r.first.LocalAddr()
	const limit = 8 // maxReservationsPerUser
	for i := range limit {
		sendUDP(t, r.client, first, aliceAllocate(t, evenPortAttr(true)))
		readPacket(t, r.first)
		r.reserve(t, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 49200 + 2*i}, []byte(fmt.Sprintf("TOKEN-%02d", i)))
	}
	sendUDP(t, r.client, first, aliceAllocate(t, evenPortAttr(true)), marker(t))
	if read, _ := readPacket(t, r.first); !bytes.Equal(read[:2], []byte{0, 1}) {
		t.Fatalf("pion read %x, want only the marker Binding", read)
	}
	got, _ := readPacket(t, r.client)
	m := decode(t, got)
	if code := errorCode(t, m); code != stun.CodeAllocQuotaReached {
		t.Fatalf("reservation %d: answer %v, want 486", limit+1, code)
	}
	checkSigned(t, m, aliceKey())

	r.allocateOnSecond(t, []byte("TOKEN-03"))
	sendUDP(t, r.client, first, aliceAllocate(t, evenPortAttr(true)))
	if read, _ := readPacket(t, r.first); !decode(t, read).Contains(stun.AttrEvenPort) {
		t.Fatal("after a token was used, the next reservation did not reach pion")
	}
}

// marker is a Binding request sent after a packet the gate answers itself:
// the socket's reader returns it once the gate has handled what came first.
func marker(t *testing.T) []byte {
	m, err := stun.Build(stun.TransactionID, stun.BindingRequest)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}
