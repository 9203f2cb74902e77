// Package wire is turnd's one copy of the STUN and TURN wire format it reads
// or writes by hand, in place and without allocating: the STUN header and
// the message types and attributes turnd looks at, one attribute walk, the
// ChannelData header and stream framing, Send/Data indication framing, and
// the FINGERPRINT and LIFETIME reads. Everything else is pion/stun's.
//
// It must never import sockets, pion or any other turnd package: the edge,
// the handlers, the relay and the server all stand on it.
package wire
