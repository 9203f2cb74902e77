package turn

import (
	"testing"

	"github.com/pion/stun/v4"
)

// TestAllocateAttrs: RFC 8656 §7.2 steps 3 to 6 and RFC 6062 §5.1 as far
// as an Allocate's own attributes decide them, in their order.
func TestAllocateAttrs(t *testing.T) {
	transport := func(proto byte) stun.RawAttribute {
		return stun.RawAttribute{Type: stun.AttrRequestedTransport, Value: []byte{proto, 0, 0, 0}}
	}
	udp, tcp := transport(17), transport(6)
	df := stun.RawAttribute{Type: stun.AttrDontFragment}
	token := stun.RawAttribute{Type: stun.AttrReservationToken, Value: []byte("12345678")}
	even := func(r byte) stun.RawAttribute { return stun.RawAttribute{Type: stun.AttrEvenPort, Value: []byte{r}} }
	family := stun.RawAttribute{Type: stun.AttrRequestedAddressFamily, Value: []byte{1, 0, 0, 0}}
	dual := stun.RawAttribute{Type: 0x8000, Value: []byte{2, 0, 0, 0}}
	dualOld := stun.RawAttribute{Type: 0x8032, Value: []byte{2, 0, 0, 0}}
	for _, tc := range []struct {
		name   string
		attrs  []stun.RawAttribute
		stream bool
		noTCP  bool
		want   allocateAsk
		code   stun.ErrorCode
	}{
		{"no REQUESTED-TRANSPORT: 400", nil, false, false, allocateAsk{}, 400},
		{"short REQUESTED-TRANSPORT: 400", []stun.RawAttribute{{Type: stun.AttrRequestedTransport, Value: []byte{17}}}, false, false, allocateAsk{}, 400},
		{"SCTP: 442", []stun.RawAttribute{transport(132)}, false, false, allocateAsk{}, 442},
		{"UDP", []stun.RawAttribute{udp}, false, false, allocateAsk{}, 0},
		{"TCP over a stream", []stun.RawAttribute{tcp}, true, false, allocateAsk{tcp: true}, 0},
		{"TCP switched off: 442", []stun.RawAttribute{tcp}, true, true, allocateAsk{}, 442},
		{"TCP switched off, over UDP: 442 first", []stun.RawAttribute{tcp}, false, true, allocateAsk{}, 442},
		{"TCP over UDP: 400", []stun.RawAttribute{tcp}, false, false, allocateAsk{}, 400},
		{"TCP with DONT-FRAGMENT: 400", []stun.RawAttribute{tcp, df}, true, false, allocateAsk{}, 400},
		{"TCP with EVEN-PORT: 400", []stun.RawAttribute{tcp, even(0)}, true, false, allocateAsk{}, 400},
		{"TCP with RESERVATION-TOKEN: 400", []stun.RawAttribute{tcp, token}, true, false, allocateAsk{}, 400},
		{"DONT-FRAGMENT", []stun.RawAttribute{udp, df}, false, false, allocateAsk{dontFragment: true}, 0},
		{"RESERVATION-TOKEN", []stun.RawAttribute{udp, token}, false, false, allocateAsk{token: []byte("12345678")}, 0},
		{"RESERVATION-TOKEN with EVEN-PORT: 400", []stun.RawAttribute{udp, token, even(0)}, false, false, allocateAsk{}, 400},
		{"RESERVATION-TOKEN with REQUESTED-ADDRESS-FAMILY: 400", []stun.RawAttribute{udp, token, family}, false, false, allocateAsk{}, 400},
		{"RESERVATION-TOKEN with ADDITIONAL-ADDRESS-FAMILY: 400", []stun.RawAttribute{udp, token, dual}, false, false, allocateAsk{}, 400},
		{"RESERVATION-TOKEN with coturn's ADDITIONAL-ADDRESS-FAMILY: 400", []stun.RawAttribute{udp, token, dualOld}, false, false, allocateAsk{}, 400},
		{"short RESERVATION-TOKEN: 400", []stun.RawAttribute{udp, {Type: stun.AttrReservationToken, Value: []byte("1234")}}, false, false, allocateAsk{}, 400},
		{"EVEN-PORT R=0", []stun.RawAttribute{udp, even(0)}, false, false, allocateAsk{even: true}, 0},
		{"EVEN-PORT R=1", []stun.RawAttribute{udp, even(0x80)}, false, false, allocateAsk{even: true, reserve: true}, 0},
		{"empty EVEN-PORT: 400", []stun.RawAttribute{udp, {Type: stun.AttrEvenPort}}, false, false, allocateAsk{}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := allocateWith(t, tc.attrs)
			got, code := allocateAttrs(m, &Policy{TCPAllocations: !tc.noTCP}, tc.stream)
			if code != tc.code {
				t.Fatalf("code %d, want %d", code, tc.code)
			}
			if code == 0 && (got.tcp != tc.want.tcp || got.dontFragment != tc.want.dontFragment ||
				string(got.token) != string(tc.want.token) || got.even != tc.want.even || got.reserve != tc.want.reserve) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
