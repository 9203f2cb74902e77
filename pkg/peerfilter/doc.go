// Package peerfilter decides which peer addresses a TURN client may relay to.
//
// It is turnd's SSRF protection: CreatePermission and ChannelBind ask it
// whether a peer IP is acceptable before a permission is installed, so that a
// client cannot use the relay to reach the server's own loopback services,
// cloud metadata endpoints (169.254.169.254) or other special-purpose ranges.
//
// The rules follow coturn (loopback first, then allowed wins over denied)
// with safe defaults: a built-in list of IANA special-purpose ranges is denied
// unless an allowed entry reopens it, and an IPv6 address that embeds an IPv4
// address (NAT64, 6to4, IPv4-compatible) is judged in both forms, so wrapping
// a forbidden IPv4 address in IPv6 does not get it through.
//
// The package knows nothing about pion, TURN messages or the config file: it
// turns lists of strings into an immutable Filter. A reload builds a new one.
package peerfilter
