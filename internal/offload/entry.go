package offload

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Entry is one channel of one UDP allocation as the kernel relays it, both ways.
type Entry struct {
	Client, Server netip.AddrPort // the client's address and turnd's client-facing address it sends to (unmapped)
	Relay, Peer    netip.AddrPort // the relay socket's address and the channel's peer (unmapped)
	Channel        uint16
	Slot           uint32 // the allocation relay socket's counter slot (NewSlot)
	// DontFragment is what the client asked for (RFC 8656 7.2); it changes
	// nothing in the kernel, which sets DF on every IPv4 datagram it
	// writes, as user space's sockets do within the path MTU.
	DontFragment bool
}

// flagV6 in the map values is F_V6 in bpf/maps.h.
const flagV6 = 2

// keys is an entry as the two maps hold it.
type keys struct {
	up      relayUpKey
	upVal   relayUpVal
	down    relayDownKey
	downVal relayDownVal
}

func port(p uint16) (b [2]uint8) {
	binary.BigEndian.PutUint16(b[:], p)
	return b
}

func sameFamily(a, b netip.AddrPort) bool {
	return a.Addr().Unmap().Is4() == b.Addr().Unmap().Is4()
}

func validPort(ap netip.AddrPort) bool {
	return ap.Addr().IsValid() && ap.Port() != 0
}

// encode checks e and lays it out for the maps; maxSlots bounds Slot.
func (e Entry) encode(maxSlots uint32) (keys, error) {
	var k keys
	for _, ap := range []netip.AddrPort{e.Client, e.Server, e.Relay, e.Peer} {
		if !validPort(ap) {
			return k, fmt.Errorf("%w: address %v", ErrInvalidEntry, ap)
		}
	}
	if !sameFamily(e.Client, e.Server) || !sameFamily(e.Relay, e.Peer) {
		return k, fmt.Errorf("%w: client %v and server %v, relay %v and peer %v must pair by family",
			ErrInvalidEntry, e.Client, e.Server, e.Relay, e.Peer)
	}
	if e.Channel < 0x4000 || e.Channel > 0x7fff {
		return k, fmt.Errorf("%w: channel %#x", ErrInvalidEntry, e.Channel)
	}
	if e.Slot >= maxSlots {
		return k, fmt.Errorf("%w: slot %d of %d", ErrInvalidEntry, e.Slot, maxSlots)
	}
	// As16 gives IPv4 in its ::ffff: form, as the program builds its keys.
	client, server := e.Client.Addr().Unmap().As16(), e.Server.Addr().Unmap().As16()
	relay, peer := e.Relay.Addr().Unmap().As16(), e.Peer.Addr().Unmap().As16()
	channel := port(e.Channel)

	k.up = relayUpKey{Client: client, Server: server,
		ClientPort: port(e.Client.Port()), ServerPort: port(e.Server.Port()), Channel: channel}
	k.upVal = relayUpVal{Relay: relay, Peer: peer,
		RelayPort: port(e.Relay.Port()), PeerPort: port(e.Peer.Port()), Slot: e.Slot}
	if e.Peer.Addr().Unmap().Is6() {
		k.upVal.Flags |= flagV6
	}
	k.down = relayDownKey{Peer: peer, Relay: relay,
		PeerPort: port(e.Peer.Port()), RelayPort: port(e.Relay.Port())}
	k.downVal = relayDownVal{Server: server, Client: client,
		ServerPort: port(e.Server.Port()), ClientPort: port(e.Client.Port()), Channel: channel, Slot: e.Slot}
	if e.Client.Addr().Unmap().Is6() {
		k.downVal.Flags |= flagV6
	}
	return k, nil
}
