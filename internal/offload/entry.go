package offload

import "net/netip"

// Entry is one channel of one UDP allocation as the kernel relays it, both
// ways.
type Entry struct {
	Client, Server netip.AddrPort // the client's address and turnd's client-facing address it sends to (unmapped)
	Relay, Peer    netip.AddrPort // the relay socket's address and the channel's peer (unmapped)
	Channel        uint16
	Slot           uint32 // the counter slot of the relay socket that sends to Peer (NewSlot)
	DontFragment   bool   // DF on the IPv4 datagrams sent to the peer
}

// Count is what the kernel relayed for one slot: datagrams and payload
// bytes each way.
type Count struct{ ToPeerPackets, ToPeerBytes, ToClientPackets, ToClientBytes uint64 }
