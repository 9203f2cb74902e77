package turn

import (
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
)

// TestFamilyRules: section 3 of docs/control-plane.md for an Allocate's
// family attributes, against each set of families turnd can serve: IPv4 by
// default (IPv6 where there is no IPv4), 440 for a family it lacks, the
// 400 cases of dual allocation, and a dual allocation served with the one
// family there is and ADDRESS-ERROR-CODE in the request's numbering.
func TestFamilyRules(t *testing.T) {
	fam := func(typ stun.AttrType, v ...byte) stun.RawAttribute {
		return stun.RawAttribute{Type: typ, Value: append(v, make([]byte, 4-len(v))...)}
	}
	requested := func(f byte) stun.RawAttribute { return fam(stun.AttrRequestedAddressFamily, f) }
	const v4, v6, both = bindings.V4, bindings.V6, bindings.Both
	for _, tc := range []struct {
		name   string
		attrs  []stun.RawAttribute
		served bindings.Families
		want   familyAsk
		code   stun.ErrorCode
	}{
		{"nothing asked: IPv4", nil, both, familyAsk{want: v4}, 0},
		{"nothing asked, IPv6-only host: IPv6", nil, v6, familyAsk{want: v6}, 0},
		{"IPv4 asked", []stun.RawAttribute{requested(1)}, both, familyAsk{want: v4, named: true}, 0},
		{"IPv6 asked", []stun.RawAttribute{requested(2)}, both, familyAsk{want: v6, named: true}, 0},
		{"IPv6 asked, none: 440", []stun.RawAttribute{requested(2)}, v4, familyAsk{}, 440},
		{"IPv4 asked, none: 440", []stun.RawAttribute{requested(1)}, v6, familyAsk{}, 440},
		{"unknown family: 440", []stun.RawAttribute{requested(3)}, both, familyAsk{}, 440},
		{"short REQUESTED-ADDRESS-FAMILY: 400", []stun.RawAttribute{{Type: stun.AttrRequestedAddressFamily, Value: []byte{1}}}, both, familyAsk{}, 400},
		{"dual", []stun.RawAttribute{fam(0x8000, 2)}, both, familyAsk{want: both, errorType: 0x8001, named: true}, 0},
		{"dual, coturn's numbering", []stun.RawAttribute{fam(0x8032, 2)}, both, familyAsk{want: both, errorType: 0x8033, named: true}, 0},
		{"dual without IPv6: IPv4 and 440 for IPv6", []stun.RawAttribute{fam(0x8000, 2)}, v4, familyAsk{want: v4, lacking: v6, errorType: 0x8001, named: true}, 0},
		{"dual without IPv4: IPv6 and 440 for IPv4", []stun.RawAttribute{fam(0x8032, 2)}, v6, familyAsk{want: v6, lacking: v4, errorType: 0x8033, named: true}, 0},
		{"dual of IPv4: 400", []stun.RawAttribute{fam(0x8000, 1)}, both, familyAsk{}, 400},
		{"dual with REQUESTED-ADDRESS-FAMILY: 400", []stun.RawAttribute{requested(1), fam(0x8000, 2)}, both, familyAsk{}, 400},
		{"dual, coturn's numbering, with REQUESTED-ADDRESS-FAMILY: 400", []stun.RawAttribute{requested(2), fam(0x8032, 2)}, both, familyAsk{}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := allocateWith(t, tc.attrs)
			got, code := askedFamilies(m, tc.served)
			if got != tc.want || code != tc.code {
				t.Errorf("got %+v, %d; want %+v, %d", got, code, tc.want, tc.code)
			}
		})
	}
}

// TestAddressErrorCode: ADDRESS-ERROR-CODE (RFC 8656 §18.12) carries the
// family, the class and number of the code, and its reason phrase.
func TestAddressErrorCode(t *testing.T) {
	m := stun.New()
	if err := (addressError{typ: 0x8033, family: bindings.V6, code: stun.CodeAddrFamilyNotSupported}).AddTo(m); err != nil {
		t.Fatal(err)
	}
	v, err := m.Get(0x8033)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\x02\x00\x04\x28Address Family not Supported"; string(v) != want {
		t.Errorf("value %q, want %q", v, want)
	}
}

// allocateWith builds an Allocate request carrying attrs, in order.
func allocateWith(t *testing.T, attrs []stun.RawAttribute) *stun.Message {
	t.Helper()
	setters := []stun.Setter{stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest)}
	for _, a := range attrs {
		setters = append(setters, a)
	}
	m, err := stun.Build(setters...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
