package allocation

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"testing"
	"time"
)

// TestMarshalIsEncodingJSON: the appending encoder writes what
// encoding/json writes for the same snapshot, byte for byte: the fixture,
// strings that need escaping, nil lists, fractional seconds and other
// zones, and an IPv6 zone.
func TestMarshalIsEncodingJSON(t *testing.T) {
	tab, _, _ := fixture(t)
	full := tab.Snapshot()
	full.NonceSecret = []byte{0, 1, 2, 0xff}
	odd := Snapshot{Version: 1, Allocations: []SnapshotAllocation{{
		Client: netip.MustParseAddrPort("[fe80::1%eth0]:1"), User: "<\"é\\\n&>\u2028", Realm: "a\x00b", Username: "a&b", TxID: "x>y", Held: "\t",
		Created:     time.Date(2026, 12, 2, 1, 2, 3, 4500, time.FixedZone("", 3600)),
		Permissions: []SnapshotPermission{{Peer: netip.MustParseAddr("fe80::2%1")}},
		TCP:         &SnapshotTCP{},
	}}}
	for name, s := range map[string]Snapshot{"fixture": full, "odd": odd, "empty": {}} {
		got, err := s.Marshal()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}
