// Package netaddr names a TURN client's 5-tuple once, for every table that
// keys by it (the allocation table, the edge's connection claims, the
// relay's boundary), and turns a net.Addr into the one form those tables
// compare: an unmapped netip.AddrPort.
//
// It is a leaf: it must never import sockets beyond net.Addr values, pion
// or any turnd package, so pkg/allocation may stand on it.
package netaddr
