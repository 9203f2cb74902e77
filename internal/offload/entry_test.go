package offload

import (
	"errors"
	"net/netip"
	"testing"
)

func TestEntryRejects(t *testing.T) {
	good := Entry{Client: client4, Server: server4, Relay: relay4, Peer: peer4, Channel: 0x4000, Slot: 1}
	cases := map[string]func(*Entry){
		"channel 0x3fff":        func(e *Entry) { e.Channel = 0x3fff },
		"channel 0x8000":        func(e *Entry) { e.Channel = 0x8000 },
		"client and server mix": func(e *Entry) { e.Server = server6 },
		"relay and peer mix":    func(e *Entry) { e.Peer = peer6 },
		"zero port":             func(e *Entry) { e.Peer = netip.AddrPortFrom(peer4.Addr(), 0) },
		"no address":            func(e *Entry) { e.Client = netip.AddrPort{} },
		"slot out of range":     func(e *Entry) { e.Slot = 8 },
	}
	if _, err := good.encode(8); err != nil {
		t.Fatalf("good entry: %v", err)
	}
	for name, change := range cases {
		e := good
		change(&e)
		if _, err := e.encode(8); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("%s: %v, want ErrInvalidEntry", name, err)
		}
	}
}

// TestEntryLayout pins what the program matches on: IPv4 in its ::ffff:
// form (mapped input unmapped first), ports and channel in network order,
// no flag for DF, the IPv6 flag by the far side's family.
func TestEntryLayout(t *testing.T) {
	mapped := netip.AddrPortFrom(netip.AddrFrom16(client4.Addr().As16()), client4.Port())
	e := Entry{Client: mapped, Server: server4, Relay: relay6, Peer: peer6, Channel: 0x4abc, Slot: 3, DontFragment: true}
	k, err := e.encode(8)
	if err != nil {
		t.Fatal(err)
	}
	if k.up.Client != client4.Addr().As16() || k.up.Client[10] != 0xff || k.up.ClientPort != [2]uint8{0x13, 0x88} ||
		k.up.Channel != [2]uint8{0x4a, 0xbc} || k.downVal.Channel != k.up.Channel {
		t.Errorf("uplink key %+v", k.up)
	}
	if k.upVal.Flags != flagV6 || k.upVal.Slot != 3 || k.downVal.Flags != 0 || k.downVal.Slot != 3 {
		t.Errorf("flags up %d down %d, slots %d %d", k.upVal.Flags, k.downVal.Flags, k.upVal.Slot, k.downVal.Slot)
	}
	if k.down.Peer != peer6.Addr().As16() || k.down.RelayPort != [2]uint8{0xc3, 0x50} {
		t.Errorf("downlink key %+v", k.down)
	}
	e.Relay, e.Peer = relay4, peer4
	if k, _ := e.encode(8); k.upVal.Flags != 0 {
		t.Errorf("v4 peer with DF: flags %d, want none", k.upVal.Flags)
	}
}
