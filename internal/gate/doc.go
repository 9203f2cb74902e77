// Package gate is turnd's policy on client messages: asked about every
// client packet before pion/turn sees it (Inspect) and about every answer
// pion writes (Outgoing), it answers or rewrites the few requests pion cannot
// handle the way turnd needs, and passes everything else through untouched:
//
//   - Allocate while draining with alternate servers: 300 Try Alternate with
//     ALTERNATE-SERVER (pion has no hook for it);
//   - Allocate for an RFC 6062 TCP relay when those are switched off: 442;
//   - RFC 6062 requests pion would dial from the wrong loop, let through or
//     leave unanswered: Connect/ConnectionBind over UDP or on the wrong
//     connection, a Connect to turnd itself or past the pending bound, a
//     TCP Allocate over UDP or with EVEN-PORT/DONT-FRAGMENT (connect.go);
//   - Allocate with DONT-FRAGMENT: the attribute is honoured (the relay socket
//     gets DF) instead of pion's 420, by re-signing the request without it;
//   - Allocate/Refresh asking for more than limits.max_lifetime: capped, and
//     for less than the default (0 on an Allocate included): the default;
//   - Allocate for an address family with no relay address: 440, not 508;
//   - Allocate with RESERVATION-TOKEN and EVEN-PORT or REQUESTED-ADDRESS-FAMILY:
//     400 (pion would never see the token, see reservation.go); EVEN-PORT
//     with R=0: hidden from pion, which would issue a token; a reservation
//     past the per-user cap: 486;
//   - Refresh, CreatePermission, ChannelBind (and Connect) on a 5-tuple with
//     no allocation: 437; signed by a user other than the owner: 441 (pion
//     is silent on both);
//   - ChannelBind with a channel number that cannot frame ChannelData, or
//     Connect to port 0: 400 (pion is silent on the latter);
//   - a request for a method pion does not serve: 400 (pion is silent);
//   - TURN REST credentials with several secrets: the secret the client used
//     is found by checking MESSAGE-INTEGRITY, so pion verifies with that key.
//
// Every answer and rewrite happens only after the request's MESSAGE-INTEGRITY
// checks out, so the client sees the real reason, signed (RFC 8489 §9.2).
// A request the gate cannot verify is charged to its client's rate limit and
// dropped past it; one whose FINGERPRINT does not match, and a Send indication
// whose FINGERPRINT does not match, are dropped silently.
// ChannelData and everything else take a two-byte look and go straight on.
//
// The gate decides and remembers (reservations, the pending hand-over
// tables, the rate limiter); it holds no socket and reads no connection:
// package edge does, and asks it. It must never import edge, relay, server,
// pion/turn, mmsg, Prometheus or HTTP, nor use net beyond net.Addr values;
// it knows nothing about the drain's internals: it asks a Policy.
package gate
