// Package mmsg moves batches of UDP datagrams with one system call
// (recvmmsg, sendmmsg) and without allocating per datagram: every buffer,
// iovec and socket address is allocated once. Reader and Writer serve one
// *net.UDPConn through the Go runtime's poller, so waits park the goroutine
// and deadlines and Close work as for any socket; Ring reads raw descriptors
// that the caller polls itself (an epoll set over many sockets); SendTo
// sends one datagram without waiting.
//
// Every call is a raw, non-blocking system call (see SendTo for why).
//
// It is turnd's batched I/O for the relay hot path. It knows nothing about
// TURN. Linux only, as turnd is.
package mmsg
