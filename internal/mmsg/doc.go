// Package mmsg moves batches of UDP datagrams with one system call
// (recvmmsg, sendmmsg) and without allocating per datagram: every buffer,
// iovec and socket address is allocated once. Reader and Writer serve one
// socket (a *net.UDPConn or a Socket) and park the goroutine when they must
// wait, with deadlines and Close working as for any socket; Ring reads raw
// descriptors that the caller polls itself (an epoll set over many
// sockets); SendTo sends one datagram without waiting. Socket is a UDP
// socket kept out of the runtime's poller, which a socket that relays
// every packet must be (see Socket for why).
//
// Every call is a raw, non-blocking system call (see SendTo for why).
//
// It is turnd's batched I/O for the relay hot path. It knows nothing about
// TURN. Linux only, as turnd is.
package mmsg
