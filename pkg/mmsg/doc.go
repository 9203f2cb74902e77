// Package mmsg moves batches of UDP datagrams with one system call
// (recvmmsg, sendmmsg) on a *net.UDPConn, through the Go runtime's poller so
// deadlines and Close work as for any socket, and without allocating per
// datagram: every buffer, iovec and socket address is allocated once.
//
// It is turnd's batched I/O for the relay hot path. It knows nothing about
// TURN. Linux only, as turnd is.
package mmsg
