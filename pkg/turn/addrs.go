package turn

import (
	"net/netip"

	"github.com/pion/stun/v4"
)

// xorAddress is an XOR-*-ADDRESS attribute of type typ (RFC 8489 §14.2).
type xorAddress struct {
	typ  stun.AttrType
	addr netip.AddrPort
}

// AddTo adds the attribute to m.
func (a xorAddress) AddTo(m *stun.Message) error {
	x := stun.XORMappedAddress{IP: a.addr.Addr().Unmap().AsSlice(), Port: int(a.addr.Port())}
	return x.AddToAs(m, a.typ)
}

// peerAddress reads the first XOR-PEER-ADDRESS; false when there is none
// or it is malformed.
func peerAddress(m *stun.Message) (netip.AddrPort, bool) {
	var x stun.XORMappedAddress
	if x.GetFromAs(m, stun.AttrXORPeerAddress) != nil {
		return netip.AddrPort{}, false
	}
	return xorToAddrPort(x)
}

// peerAddresses reads every XOR-PEER-ADDRESS (RFC 8656 §10.2: a
// CreatePermission may carry several); false when there is none or one is
// malformed.
func peerAddresses(m *stun.Message) ([]netip.AddrPort, bool) {
	var out []netip.AddrPort
	for _, a := range m.Attributes {
		if a.Type != stun.AttrXORPeerAddress {
			continue
		}
		one := stun.Message{TransactionID: m.TransactionID, Attributes: stun.Attributes{a}}
		p, ok := peerAddress(&one)
		if !ok {
			return nil, false
		}
		out = append(out, p)
	}
	return out, len(out) > 0
}

// xorToAddrPort is x as an unmapped netip.AddrPort.
func xorToAddrPort(x stun.XORMappedAddress) (netip.AddrPort, bool) {
	ip, ok := netip.AddrFromSlice(x.IP)
	if !ok {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(x.Port)), true //nolint:gosec // a 16-bit field
}
