package allocation

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
)

var update = flag.Bool("update", false, "rewrite testdata/snapshot-v1.json")

// counting makes a table's tokens and CONNECTION-IDs predictable.
func counting() func([]byte) {
	var n byte
	return func(b []byte) {
		n++
		for i := range b {
			b[i] = n
		}
	}
}

// fixture is a table holding one of everything a snapshot carries: a
// dual-stack UDP allocation with permissions, a bound channel, a cooling
// one, a reservation and traffic; an RFC 6062 TCP allocation with a bound
// and an unbound connection; and a TLS one, which no snapshot carries.
func fixture(t *testing.T) (*Table, *Allocation, *Allocation) {
	t.Helper()
	tab := New(Limits{}, Hooks{})
	tab.random = counting()
	a := insert(t, tab, "alice", tuple(5000), dual(50002), 10*time.Minute)
	a.Username, a.Realm, a.TxID, a.DontFragment = "1767225600:alice", "turnd.local", [12]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, true
	must(t, tab.Permit(a, []netip.Addr{peerA.Addr(), peer6.Addr()}, t0, 0))
	must(t, tab.BindChannel(a, 0x4001, peerB, t0.Add(-ChannelLifetime), 0, 0))
	tab.Expire(t0) // 0x4001 cools down
	must(t, tab.BindChannel(a, 0x4000, peerA, t0.Add(time.Second), 0, 0))
	if _, err := tab.Reserve(Reservation{Port: 50003, User: "alice", Expires: t0.Add(ReservationLifetime), Holder: a.Tuple}); err != nil {
		t.Fatal(err)
	}
	var c traffic.Counters
	a.Route.Usage.ToPeer(&c, 100)
	a.Route.Usage.FromPeer(&c, 2, 300)

	tp := netaddr.FiveTuple{Client: netip.MustParseAddrPort("192.0.2.2:6000"), Server: server, TCP: true}
	b := insert(t, tab, "bob", tp, v4(50010), time.Hour)
	b.PeerTCP = true
	id, err := tab.AddConnection(b, netip.MustParseAddrPort("203.0.113.9:443"), t0, 0)
	must(t, err)
	if _, _, err := tab.BindConnection(id, t0); err != nil {
		t.Fatal(err)
	}
	_, err = tab.AddConnection(b, netip.MustParseAddrPort("203.0.113.9:444"), t0.Add(time.Second), 0)
	must(t, err)

	tls := netaddr.FiveTuple{Client: netip.MustParseAddrPort("192.0.2.3:7000"), Server: server, TCP: true}
	k, _ := tab.Admit("carol", tls.Client.Addr(), TLS)
	must(t, k.Insert(&Allocation{Tuple: tls, Transport: TLS, User: "carol"}, v4(50020), time.Hour, t0))
	return tab, a, b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// clients is Restore's callback for tests: every 5-tuple has a client.
func clients(tp netaddr.FiveTuple) (bindings.Client, error) {
	return bindings.Client{Tuple: tp}, nil
}

func marshal(t *testing.T, s Snapshot) []byte {
	t.Helper()
	b, err := s.Marshal()
	must(t, err)
	return b
}

// TestSnapshotRoundTrip: a table read back from its snapshot serves as
// the original did — the same allocations (TLS ones left out), routes,
// deadlines to the nanosecond, reservation, connections and counters —
// and writes the same snapshot.
func TestSnapshotRoundTrip(t *testing.T) {
	tab, _, _ := fixture(t)
	s := tab.Snapshot()
	s.NonceSecret = []byte("secret of the old process")
	out := marshal(t, s)
	parsed, err := ParseSnapshot(out)
	must(t, err)
	ev, hooks := newEvents()
	var asked []netaddr.FiveTuple
	b, err := Restore(parsed, Limits{}, hooks, func(tp netaddr.FiveTuple) (bindings.Client, error) {
		asked = append(asked, tp)
		return clients(tp)
	})
	must(t, err)
	if string(parsed.NonceSecret) != "secret of the old process" {
		t.Fatalf("nonce secret %q", parsed.NonceSecret)
	}
	second := b.Snapshot()
	second.NonceSecret = parsed.NonceSecret
	if again := marshal(t, second); !bytes.Equal(again, out) {
		t.Fatalf("the restored table writes another snapshot:\n%s\nwant\n%s", again, out)
	}
	if all := b.Allocations(); len(all) != 2 || all[0].User != "alice" || all[1].User != "bob" {
		t.Fatalf("restored allocations %v, want alice's then bob's", all)
	}
	if r, ok := b.Allocations()[0].Held(); !ok || r.Port != 50003 {
		t.Fatalf("alice holds %+v, %v; want port 50003", r, ok)
	}
	if ids := b.Allocations()[1].Connections(); len(ids) != 2 || ids[0] >= ids[1] {
		t.Fatalf("bob's connections %v, want two in order", ids)
	}
	if b.Count() != 2 || len(asked) != 2 {
		t.Fatalf("restored %d allocations, asked for %d clients; want 2 (the TLS one stays behind)", b.Count(), len(asked))
	}
	a, ok := b.Get(tuple(5000))
	if !ok || a.Route.Client.Tuple != tuple(5000) {
		t.Fatal("the UDP allocation or its client is missing")
	}
	if p, ok := a.Route.Peer(0x4000); !ok || p != peerA || !a.Route.Permitted(peer6.Addr()) {
		t.Fatal("the restored route does not relay the bound channel or the IPv6 permission")
	}
	if _, ok := a.Route.Peer(0x4001); ok {
		t.Fatal("the cooling channel is routed")
	}
	if err := b.BindChannel(a, 0x4001, peerA, t0, 0, 0); !errors.Is(err, ErrChannelNumberTaken) {
		t.Fatalf("the cooling channel's number was free after the restore: %v", err)
	}
	if u := a.Usage(); u.ToPeerPackets != 1 || u.FromPeerBytes != 300 || u.Permissions != 3 || u.Channels != 2 {
		t.Fatalf("restored usage %+v", u)
	}
	if got, ok := b.ByRelayed(relay6(50002)); !ok || got != a {
		t.Fatal("the IPv6 relayed address does not find its allocation")
	}
	tcp, _ := b.Get(netaddr.FiveTuple{Client: netip.MustParseAddrPort("192.0.2.2:6000"), Server: server, TCP: true})
	if tcp == nil || !tcp.PeerTCP {
		t.Fatal("the RFC 6062 allocation is missing")
	}
	// The reservation is held, the unbound connection still bindable, both
	// until their old deadlines, which pass on the new table at their time.
	if b.ReservationCount("alice") != 1 {
		t.Fatal("the reservation was not restored")
	}
	b.Expire(t0.Add(ConnectionBindTimeout + time.Second)) // the connection came a second later
	if r := got(t, ev.unreserved); r.Port != 50003 || r.Holder != tuple(5000) {
		t.Fatalf("unreserved %+v", r)
	}
	got(t, ev.conn)
	ev.none(t, "at 31 s")
	// The cooling channel frees its number 5 minutes after its expiry, as
	// it would have on the old table.
	b.Expire(t0.Add(ChannelCooldown - 1))
	if err := b.BindChannel(a, 0x4001, netip.MustParseAddrPort("203.0.113.20:1"), t0, 0, 0); !errors.Is(err, ErrChannelNumberTaken) {
		t.Fatalf("the cooling number was free before its cool-down ended: %v", err)
	}
	b.Expire(t0.Add(ChannelCooldown))
	if err := b.BindChannel(a, 0x4001, netip.MustParseAddrPort("203.0.113.20:1"), t0, 0, 0); err != nil {
		t.Fatalf("the cooling number was not freed at the end of its cool-down: %v", err)
	}
	b.Expire(t0.Add(PermissionLifetime + time.Second - 1))
	if !a.Route.Permitted(peerA.Addr()) {
		t.Fatal("the channel's permission went before its deadline")
	}
	b.Expire(t0.Add(10 * time.Minute))
	if why := got(t, ev.ended); why != EndExpired {
		t.Fatalf("the UDP allocation ended %v at its old deadline", why)
	}
}

// TestSnapshotGoldenV1: the format of version 1 is the golden file's, to
// the byte, both ways; a change to it shows in review (go test -update
// rewrites it, and must come with a new version).
func TestSnapshotGoldenV1(t *testing.T) {
	tab, _, _ := fixture(t)
	s := tab.Snapshot()
	s.NonceSecret = []byte("nonce secret")
	var out bytes.Buffer
	must(t, json.Indent(&out, marshal(t, s), "", "  "))
	out.WriteByte('\n')
	const golden = "testdata/snapshot-v1.json"
	if *update {
		must(t, os.WriteFile(golden, out.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	must(t, err)
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("snapshot differs from %s:\n%s", golden, out.Bytes())
	}
	parsed, err := ParseSnapshot(want)
	must(t, err)
	restored, err := Restore(parsed, Limits{}, Hooks{}, clients)
	must(t, err)
	again := restored.Snapshot()
	again.NonceSecret = parsed.NonceSecret
	var back bytes.Buffer
	must(t, json.Indent(&back, marshal(t, again), "", "  "))
	back.WriteByte('\n')
	if !bytes.Equal(back.Bytes(), want) {
		t.Fatalf("the golden file read back writes:\n%s", back.Bytes())
	}
}

// TestRestoreRefusesUnknownVersionsAndFields: a successor never
// half-understands its predecessor — another version, an unknown field
// anywhere, trailing data, or records that contradict each other fail,
// and no table is returned.
func TestRestoreRefusesUnknownVersionsAndFields(t *testing.T) {
	want, err := os.ReadFile("testdata/snapshot-v1.json")
	must(t, err)
	golden := string(want)
	for name, doc := range map[string]string{
		"version 2":         strings.Replace(golden, `"version": 1`, `"version": 2`, 1),
		"no version":        strings.Replace(golden, `"version": 1,`, ``, 1),
		"unknown top field": strings.Replace(golden, `"version": 1,`, `"version": 1, "extra": true,`, 1),
		"unknown nested":    strings.Replace(golden, `"dont_fragment": true,`, `"dont_fragment": true, "ttl": 64,`, 1),
		"trailing data":     golden + `{"version": 1}`,
	} {
		if _, err := ParseSnapshot([]byte(doc)); err == nil {
			t.Errorf("%s: parsed", name)
		} else if strings.HasPrefix(name, "version") && !errors.Is(err, ErrSnapshotVersion) {
			t.Errorf("%s: %v, want ErrSnapshotVersion", name, err)
		}
	}
	s, err := ParseSnapshot(want)
	must(t, err)
	bad := s
	bad.Version = 2
	if _, err := Restore(bad, Limits{}, Hooks{}, clients); !errors.Is(err, ErrSnapshotVersion) {
		t.Errorf("Restore of version 2: %v", err)
	}
	noSocket := errors.New("no socket")
	if tab, err := Restore(s, Limits{}, Hooks{}, func(netaddr.FiveTuple) (bindings.Client, error) {
		return bindings.Client{}, noSocket
	}); !errors.Is(err, noSocket) || tab != nil {
		t.Errorf("Restore without a client's socket: %v, %v", tab, err)
	}
	bad = s
	bad.Allocations = append([]SnapshotAllocation(nil), s.Allocations...)
	bad.Allocations[1].Relayed = s.Allocations[0].Relayed
	if _, err := Restore(bad, Limits{}, Hooks{}, clients); !errors.Is(err, ErrRelayInUse) {
		t.Errorf("two allocations on one relayed address: %v", err)
	}
	bad = s
	bad.Reservations = append(bad.Reservations, SnapshotReservation{Token: "0909090909090909", Port: 1})
	if _, err := Restore(bad, Limits{}, Hooks{}, clients); !errors.Is(err, ErrSnapshotInvalid) {
		t.Errorf("a reservation held by nobody: %v", err)
	}
}
