package main

import (
	"encoding/binary"
	"net"
	"time"

	"github.com/pion/stun/v4"
)

// TURN attributes (RFC 8656 §18). pion/stun knows their type codes but
// pion/turn keeps its encoders internal, so the few a client sends are here.

// protoUDP is REQUESTED-TRANSPORT's value for UDP (an IANA protocol number).
const protoUDP = 17

// requestedTransportUDP asks for a UDP relay.
func requestedTransportUDP() stun.Setter {
	return stun.RawAttribute{Type: stun.AttrRequestedTransport, Value: []byte{protoUDP, 0, 0, 0}}
}

// lifetime is LIFETIME in whole seconds; 0 deletes the allocation.
func lifetime(d time.Duration) stun.Setter {
	v := make([]byte, 4)
	binary.BigEndian.PutUint32(v, uint32(d/time.Second))
	return stun.RawAttribute{Type: stun.AttrLifetime, Value: v}
}

// channelNumber is CHANNEL-NUMBER: the number, then two reserved bytes.
func channelNumber(ch uint16) stun.Setter {
	v := make([]byte, 4)
	binary.BigEndian.PutUint16(v, ch)
	return stun.RawAttribute{Type: stun.AttrChannelNumber, Value: v}
}

// data is DATA: the application payload of a Send indication.
func data(p []byte) stun.Setter {
	return stun.RawAttribute{Type: stun.AttrData, Value: p}
}

// xorPeerAddress is XOR-PEER-ADDRESS, which shares XOR-MAPPED-ADDRESS's encoding.
type xorPeerAddress struct{ addr *net.UDPAddr }

// AddTo adds the attribute to m.
func (p xorPeerAddress) AddTo(m *stun.Message) error {
	return stun.XORMappedAddress{IP: p.addr.IP, Port: p.addr.Port}.AddToAs(m, stun.AttrXORPeerAddress)
}

// relayedAddress reads XOR-RELAYED-ADDRESS from an Allocate success response.
func relayedAddress(m *stun.Message) (*net.UDPAddr, error) {
	var a stun.XORMappedAddress
	if err := a.GetFromAs(m, stun.AttrXORRelayedAddress); err != nil {
		return nil, err
	}
	return &net.UDPAddr{IP: a.IP, Port: a.Port}, nil
}
