package stuntest

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// Request builds a STUN request of method carrying USERNAME user, REALM,
// NONCE and extra; with key it is signed with MESSAGE-INTEGRITY, and with
// fingerprint it ends in FINGERPRINT.
func Request(tb testing.TB, method stun.Method, user string, key []byte, fingerprint bool, extra ...stun.Setter) []byte {
	tb.Helper()
	setters := []stun.Setter{
		stun.TransactionID,
		stun.NewType(method, stun.ClassRequest),
		stun.NewUsername(user),
		stun.NewRealm(Realm),
		stun.NewNonce(Nonce),
	}
	setters = append(setters, extra...)
	if key != nil {
		setters = append(setters, stun.MessageIntegrity(key))
	}
	if fingerprint {
		setters = append(setters, stun.Fingerprint)
	}
	m, err := stun.Build(setters...)
	if err != nil {
		tb.Fatalf("build request: %v", err)
	}
	return m.Raw
}

// AliceAllocate is an Allocate for UDP signed by the static user.
func AliceAllocate(tb testing.TB, extra ...stun.Setter) []byte {
	tb.Helper()
	return Request(tb, stun.MethodAllocate, User, AliceKey(), true, append([]stun.Setter{Transport(17)}, extra...)...)
}

// Transport sets REQUESTED-TRANSPORT to the IP protocol number proto.
func Transport(proto byte) stun.Setter {
	return stun.RawAttribute{Type: stun.AttrRequestedTransport, Value: []byte{proto, 0, 0, 0}}
}

// Lifetime sets LIFETIME to d in whole seconds.
func Lifetime(d time.Duration) stun.Setter {
	v := make([]byte, 4)
	binary.BigEndian.PutUint32(v, uint32(d/time.Second))
	return stun.RawAttribute{Type: stun.AttrLifetime, Value: v}
}

// DontFragment sets the empty DONT-FRAGMENT attribute.
func DontFragment() stun.Setter { return stun.RawAttribute{Type: stun.AttrDontFragment} }

// ReservationToken sets RESERVATION-TOKEN to tok.
func ReservationToken(tok []byte) stun.Setter {
	return stun.RawAttribute{Type: stun.AttrReservationToken, Value: tok}
}

// ChannelData is a ChannelData message on channel 0x4000 carrying payload,
// padded to four bytes when padded (as on streams, RFC 8656 §12.5).
func ChannelData(payload []byte, padded bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0x4000)
	b = binary.BigEndian.AppendUint16(b, uint16(len(payload)))
	b = append(b, payload...)
	for padded && len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// SendIndication is a Send indication to a peer (no integrity, as clients send them).
func SendIndication(tb testing.TB, payload []byte) []byte {
	tb.Helper()
	m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		XORAddr(stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 9),
		stun.RawAttribute{Type: stun.AttrData, Value: payload})
	if err != nil {
		tb.Fatalf("build send indication: %v", err)
	}
	return m.Raw
}

// XORAddr sets an XOR-encoded address attribute of type t. It is a func, not
// an exported struct, so callers need no keyed literal to satisfy go vet.
func XORAddr(t stun.AttrType, ip net.IP, port int) stun.Setter {
	return xorAddr{t, ip, port}
}

type xorAddr struct {
	t    stun.AttrType
	ip   net.IP
	port int
}

func (a xorAddr) AddTo(m *stun.Message) error {
	return stun.XORMappedAddress{IP: a.ip, Port: a.port}.AddToAs(m, a.t)
}
