package relay

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/internal/wire"
)

// The downlink: peer datagrams arriving on relay sockets go back to the
// clients, through the lanes (the client-facing UDP sockets) or over the
// clients' TCP and TLS connections.
//
// A goroutine per relay socket would make every datagram cost a runtime
// wake-up, a goroutine switch, a recvfrom and a sendto; with hundreds of
// allocations that is most of a relay's CPU besides the kernel's own work.
// Instead, each downlink loop owns an epoll set of relay sockets
// (one loop per two CPUs): one wake-up serves every socket that became
// readable, each socket is read with one recvmmsg, and the replies to UDP
// clients are sent with one sendmmsg per lane; a TCP client's reply is
// written whole at once or dropped, never waited for (Stream.TryWritev),
// a TLS client's too. The epoll descriptor itself sits in the Go runtime's
// poller, so an idle loop parks like any goroutine blocked on a read — no
// thread is pinned and GC is never held up.

const (
	// downlinkSlots bounds the datagrams one loop holds before it flushes
	// them to the lanes: one sendmmsg per lane per this many datagrams.
	downlinkSlots = 64
	// perSocket is how many datagrams one socket gets per turn, so a
	// flooded socket cannot starve the others of its loop.
	perSocket = 8
	// datagramRoom fits the largest UDP payload, behind room for a Data
	// indication head and followed by padding.
	datagramRoom = wire.DataIndicationHead6 + 65535 + 3
)

// downlinkLoops is how many loops serve cpus CPUs: one per two. Each CPU
// already runs a lane's read loop (the uplink); fewer, fuller downlink
// rounds cost less per datagram than more, emptier ones, while larger
// machines still spread the work (figures: docs/benchmarks.md).
func downlinkLoops(cpus int) int {
	return max(1, (cpus+1)/2)
}

// downlink is one loop and its epoll set.
type downlink struct {
	relay *Relay
	efd   int
	file  *os.File // efd, registered in the runtime's poller
	rc    syscall.RawConn
	poll  func(fd uintptr) bool // bound once: a method value per call would allocate

	// mu is held while one round of ready sockets is handled; a closing
	// Conn takes it to leave the set, so the loop never reads a descriptor
	// that was closed (and perhaps reused) under it.
	mu      sync.Mutex
	closed  bool
	inRound bool      // mu is held by round (see recovered)
	cur     int32     // the descriptor round is handling
	gen     uint64    // numbers watched entries, so a descriptor reused while mu was let go is told apart
	inReady uint64    // the gen of the entry whose ready runs, without mu (callReady); 0: none
	readied sync.Cond // on mu: signalled when a ready callback returns
	fds     []watched // by descriptor: small numbers, looked up once per ready descriptor
	events  [downlinkSlots]unix.EpollEvent
	ring    *mmsg.Ring
	used    int         // ring slots holding datagrams not yet flushed
	pass    uint32      // counts epoll_wait calls; see readSocket
	behind  bool        // the previous epoll_wait filled events: more sockets were ready than one pass takes
	lanes   []laneBatch // one per lane this loop has written to; a handful
	vec     [][]byte    // frames of one socket's read for a TCP client (readSocket)

	// Under mu too: the hand-over's pause (pause.go).
	paused bool          // Pause asked the loop to read nothing
	parked chan struct{} // closed once the loop holds nothing and reads no more, for this pause
	idle   bool          // between rounds, no datagram held: not started, or waiting in the poller
	wake   sync.Cond     // on mu: signalled by Resume and close
}

// watched is what a descriptor in the set is: a relay socket, or a plain
// TCP client's connection read for the edge (see Watch).
type watched struct {
	conn     *Conn
	ready    func() bool
	released func()
	gen      uint64
}

type laneBatch struct {
	sock *mmsg.Socket
	w    *mmsg.Writer
}

func newDownlink(rl *Relay, paused bool) (*downlink, error) {
	efd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create downlink epoll: %w", err)
	}
	if err := unix.SetNonblock(efd, true); err != nil {
		_ = unix.Close(efd)
		return nil, fmt.Errorf("create downlink epoll: %w", err)
	}
	d := &downlink{relay: rl, efd: efd, file: os.NewFile(uintptr(efd), "relay-downlink-epoll"),
		ring: mmsg.NewRing(downlinkSlots, datagramRoom, wire.DataIndicationHead6), vec: make([][]byte, 0, perSocket)}
	if d.rc, err = d.file.SyscallConn(); err != nil {
		_ = d.file.Close()
		return nil, fmt.Errorf("create downlink epoll: %w", err)
	}
	d.poll = d.round
	d.readied.L = &d.mu
	d.wake.L = &d.mu
	d.idle = true // a loop that has not started holds nothing
	if paused {
		d.pause()
	}
	go d.run()
	return d, nil
}

// run waits for the epoll set in the runtime's poller until close, and
// for Resume while paused.
func (d *downlink) run() {
	for {
		d.mu.Lock()
		d.awaitResume()
		closed := d.closed
		d.mu.Unlock()
		if closed {
			return
		}
		if err := d.serve(); err != nil {
			return
		}
	}
}

// serve runs rounds until the set is closed. A panic while one descriptor
// is handled ends up here instead of killing every call: the descriptor
// leaves the set (being level-triggered, it would panic again at once),
// what the round had batched is dropped, and the loop serves the others.
func (d *downlink) serve() (err error) {
	defer func() {
		if v := recover(); v != nil {
			d.recovered(v)
			err = nil
		}
	}()
	return d.rc.Read(d.poll)
}

// recovered cleans up after a panic in round, which holds mu. A relay
// socket that panicked leaves the set and is closed: left open, its
// allocation would live on without ever relaying a peer's datagram again,
// where closing it ends the allocation and its client notices.
func (d *downlink) recovered(v any) {
	var broken *Conn
	if d.inReady != 0 { // in a ready callback, which runs without mu
		d.mu.Lock()
		d.inRound = true
		if w := d.at(d.cur); w.gen != d.inReady {
			d.cur = -1 // it left the set while it ran: nothing to take out
		}
		d.inReady = 0
		d.readied.Broadcast()
	}
	if d.inRound {
		if w := d.at(d.cur); d.cur >= 0 && (w.conn != nil || w.ready != nil) {
			d.unwatch(d.cur)
			if w.released != nil {
				w.released()
			}
			broken = w.conn
		}
		d.lanes = nil // their batches point into the ring: start afresh
		d.used = 0
		d.inRound = false
		d.mu.Unlock()
	}
	if broken != nil {
		_ = broken.Close() // takes mu: after the unlock
	}
	if d.relay.opts.Panicked != nil {
		d.relay.opts.Panicked(v)
	}
}

// round handles ready sockets until none is ready, then flushes; false
// tells the runtime to park until the epoll set is readable again.
//
// Hot path: no allocation.
func (d *downlink) round(uintptr) bool {
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return true
		}
		if d.paused {
			// Checked before each epoll_wait, after the previous pass was
			// flushed: nothing read is held while parked.
			d.idle = true
			d.signalParked()
			d.mu.Unlock()
			return true // run waits for Resume
		}
		d.idle = false
		d.inRound = true
		n, err := epollPoll(d.efd, d.events[:])
		d.pass++
		behind := d.behind
		d.behind = n == len(d.events)
		if err != nil && !errors.Is(err, unix.EINTR) {
			d.inRound = false
			d.mu.Unlock()
			return true // the set is gone: run sees closed
		}
		for i := 0; i < n; i++ {
			fd := d.events[i].Fd
			d.cur = fd
			switch w := d.at(fd); {
			case w.conn != nil:
				d.readSocket(w.conn, behind)
			case w.ready != nil:
				if !d.callReady(fd, w) {
					return true // closed while ready ran: run sees closed
				}
			}
		}
		d.cur = -1 // a panic in flush is no descriptor's
		d.flush()
		d.inRound = false
		idle := n == 0 && err == nil
		d.idle = idle // parks in the poller: a Pause finds it parked
		d.mu.Unlock()
		if idle {
			return false
		}
	}
}

// callReady runs the ready callback of w, watched as fd, without mu: what
// it calls may take the loop's lock itself, as a handler answering a TCP
// client inline does when it opens or closes an allocation this loop
// serves (Routes.Open, Routes.Close), or hands its connection elsewhere
// (Loop.Unwatch). Descriptors removed meanwhile are out of the set when
// the round goes on (at finds nothing, or the entry that reused the
// number). Called with mu held, it returns with mu held, or false with mu
// released when the loop was closed meanwhile.
func (d *downlink) callReady(fd int32, w watched) bool {
	d.inRound, d.inReady = false, w.gen
	d.mu.Unlock()
	ok := w.ready()
	d.mu.Lock()
	d.inRound, d.inReady = true, 0
	d.readied.Broadcast()
	if d.closed {
		d.inRound = false
		d.mu.Unlock()
		return false
	}
	if !ok && d.at(fd).gen == w.gen {
		d.unwatch(fd)
	}
	return true
}

// readSocket relays what waits on c's socket: one datagram, or up to
// perSocket if the socket was read in the previous pass as well, or if the
// loop is behind.
//
// Most of the time a relay socket holds one datagram (a call's packets are
// milliseconds apart), and recvfrom reads it in one try where recvmmsg
// would try a second receive to find the queue empty. A socket that is
// ready pass after pass has a backlog: recvmmsg then takes several at a
// time. The epoll set is level-triggered, so whatever one pass leaves is
// reported in the next. When more sockets are ready than one pass takes
// (behind: the previous epoll_wait filled its array), a socket waits
// several passes for its turn, and every socket gets recvmmsg: reading one
// datagram per turn there let a busy client's socket fall behind its
// uplink until the kernel dropped datagrams (uclient -t -m 200 -n 3000).
func (d *downlink) readSocket(c *Conn, behind bool) {
	if d.used+perSocket > d.ring.Len() {
		cur := d.cur
		d.cur = -1 // a panic in flush is not c's
		d.flush()
		d.cur = cur
	}
	var (
		n   int
		err error
	)
	if behind || c.readPass+1 == d.pass {
		n, err = d.ring.Recv(int(c.fd), d.used, perSocket)
	} else if ok, rerr := d.ring.RecvOne(int(c.fd), d.used); ok {
		n = 1
	} else {
		err = rerr
	}
	c.readPass = d.pass
	if err != nil {
		return // a socket error (an ICMP report): nothing to relay
	}
	cp := c.client.Load()
	d.vec = d.vec[:0]
	vecBytes, vecCost := 0, 0
	header := udpHeader(c.key.v6)
	counters := c.relay.opts.Counters
	usage := &c.route.Usage
	for i := d.used; i < d.used+n; i++ {
		buf, size, from, truncated := d.ring.Datagram(i)
		switch {
		case cp == nil:
			// Not attached yet: nothing can have permitted the peer.
			usage.UnpermittedFrom(counters, size)
			continue
		case truncated:
			c.discard(from, size)
			continue
		}
		// Only what is relayed is charged: junk from a host without a
		// permission must not spend the allocation's rate.
		frame, why, ok := c.frameDown(buf, wire.DataIndicationHead6, size, from, cp.Stream != nil)
		if !ok {
			c.dropFrom(why, size)
			continue
		}
		if !c.fromRate.allow(size+header, c.relay) {
			usage.Limited(counters, false, size)
			continue
		}
		if cp.Stream != nil {
			d.vec = append(d.vec, frame) // written below, all in one go
			vecBytes += size
			vecCost += size + header
			continue
		}
		// Handed to the kernel at the round's flush; one it refuses
		// there is counted as dropped too (flush).
		if w := d.lane(c.lane); w != nil && w.Add(frame, cp.Tuple.Client) == nil {
			c.fromPeer(1, size)
		} else {
			c.fromRate.refund(size + header)
			c.dropFrom(traffic.SendError, size)
		}
	}
	if len(d.vec) > 0 {
		// A TCP or TLS client: written now or dropped (its connection is
		// busy or full), never waited for — one slow client must not
		// stall the loop's other sockets. Media over a backed-up
		// connection is late anyway. What one read brought is written
		// with one system call, as one TCP segment where it fits.
		if cp.Stream.TryWritev(d.vec) {
			c.fromPeer(len(d.vec), vecBytes)
		} else {
			c.fromRate.refund(vecCost)
			dropInto(&counters.DroppedToClient[traffic.ClientBusy], len(d.vec), vecBytes)
		}
		clear(d.vec) // keep no stale frames from the ring
	}
	d.used += n
}

// lane returns the batch of the lane socket sock.
func (d *downlink) lane(sock *mmsg.Socket) *mmsg.Writer {
	for _, l := range d.lanes {
		if l.sock == sock {
			return l.w
		}
	}
	w, err := mmsg.NewWriter(sock, downlinkSlots)
	if err != nil {
		return nil // not a socket any more: nothing can be sent through it
	}
	d.lanes = append(d.lanes, laneBatch{sock: sock, w: w})
	return w
}

// flush sends every queued datagram and frees the ring.
func (d *downlink) flush() {
	for _, l := range d.lanes {
		if l.w.Pending() > 0 {
			// Like a lone sendto, a datagram the kernel refuses is lost:
			// UDP promises no better, and the peer's next one follows.
			if dropped, _ := l.w.Flush(); dropped > 0 {
				d.relay.opts.Counters.DroppedToClient[traffic.SendError].Packets.Add(uint64(dropped))
			}
		}
	}
	d.used = 0
}

// awaitReady waits, with mu held, until no ready callback of fd (-1: of
// any descriptor) is running, so its connection can be handed back.
func (d *downlink) awaitReady(fd int32) {
	for d.inReady != 0 && (fd < 0 || d.cur == fd) {
		d.readied.Wait()
	}
}

// at returns what descriptor fd is in the set as; the zero watched if nothing.
func (d *downlink) at(fd int32) watched {
	if fd < 0 || int(fd) >= len(d.fds) {
		return watched{}
	}
	return d.fds[fd]
}

// insert puts fd in the set as w. Called with mu held.
func (d *downlink) insert(fd int32, w watched) error {
	if d.closed {
		return net.ErrClosed
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: fd}
	if err := unix.EpollCtl(d.efd, unix.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
		return err
	}
	if int(fd) >= len(d.fds) {
		d.fds = append(d.fds, make([]watched, int(fd)+1-len(d.fds))...)
	}
	d.gen++
	w.gen = d.gen
	d.fds[fd] = w
	return nil
}

// unwatch takes fd out of the set. Called with mu held.
func (d *downlink) unwatch(fd int32) {
	d.fds[fd] = watched{}
	if !d.closed {
		_ = unix.EpollCtl(d.efd, unix.EPOLL_CTL_DEL, int(fd), nil)
	}
}

// add puts c's socket in the set.
func (d *downlink) add(c *Conn) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.insert(c.fd, watched{conn: c}); err != nil {
		return fmt.Errorf("watch relay socket: %w", err)
	}
	return nil
}

// remove takes c's socket out of the set; after it returns the loop no
// longer touches the descriptor, which may then be closed.
func (d *downlink) remove(c *Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at(c.fd).conn == c {
		d.unwatch(c.fd)
	}
}

// close ends the loop and hands every client connection it was reading
// back to its owner (released). Relay sockets still in the set are the
// caller's to close.
func (d *downlink) close() {
	d.mu.Lock()
	d.awaitReady(-1)
	d.closed = true
	d.signalParked() // a closed loop reads nothing: a Pause need not wait for it
	d.wake.Broadcast()
	for fd, w := range d.fds {
		if w.released != nil {
			d.fds[fd] = watched{}
			w.released()
		}
	}
	d.mu.Unlock()
	// Not under mu: Close waits for the loop to leave the descriptor, and
	// the loop takes mu to see that it must.
	_ = d.file.Close()
}

// epollPoll is epoll_wait with a zero timeout, as a raw system call: it
// never blocks, so telling the scheduler about it would only invite sysmon
// to hand the P to another thread mid-round (see internal/mmsg).
func epollPoll(efd int, events []unix.EpollEvent) (int, error) {
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(efd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
