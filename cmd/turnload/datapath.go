package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// The data path of relay mode: per client a stream (prebuilt frames and
// receive buffers); per worker one loop that, every tick, sends its share
// of the rate over its streams and drains whichever of them epoll reports
// readable, without blocking. Wakeups are the main cost of a UDP load
// generator after the kernel's own send path: ticking keeps them at one per
// worker per millisecond whatever the packet rate, where a reader blocked
// per socket would wake per datagram. The tick does not blur RTTs, which
// use the kernel's receive timestamp (SO_TIMESTAMPNS). Everything here is
// the hot path: no allocations per datagram, one clock read per batch.

// stream is one client's data path.
type stream struct {
	s      *session
	pc     *ipv4.PacketConn
	out    []frame
	outMsg []ipv4.Message
	seq    uint32

	inBufs [][]byte
	inOOB  [][]byte
	inMsg  []ipv4.Message
	rx     rxStats
}

// oobSize holds one SCM_TIMESTAMPNS control message (16-byte header and a
// 16-byte timespec) with room to spare.
const oobSize = 64

// rxStats is what one stream received; merged after the run.
type rxStats struct {
	received  uint64
	other     uint64 // datagrams that were not data (late STUN responses)
	misrouted uint64 // data carrying another client's index
	last      time.Duration
	rtt       hist
}

func newStream(s *session, o *options, peer *net.UDPAddr) (*stream, error) {
	// The last control transaction left a read deadline behind.
	if err := s.conn.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("clear read deadline: %w", err)
	}
	if err := timestampReceives(s.conn); err != nil {
		return nil, err
	}
	st := &stream{s: s, pc: ipv4.NewPacketConn(s.conn)}
	st.out = make([]frame, o.batch)
	st.outMsg = make([]ipv4.Message, o.batch)
	for i := range st.out {
		if o.sendIndications {
			f, err := newSendFrame(peer, o.size)
			if err != nil {
				return nil, err
			}
			st.out[i] = f
		} else {
			st.out[i] = newChannelFrame(firstChannel, o.size)
		}
		st.outMsg[i].Buffers = [][]byte{st.out[i].buf}
	}
	// Room for a Data indication around the payload, whatever attributes
	// the server adds.
	inSize := o.size + 128
	st.inBufs = make([][]byte, o.batch)
	st.inOOB = make([][]byte, o.batch)
	st.inMsg = make([]ipv4.Message, o.batch)
	for i := range st.inMsg {
		st.inBufs[i] = make([]byte, inSize)
		st.inOOB[i] = make([]byte, oobSize)
		st.inMsg[i].Buffers = [][]byte{st.inBufs[i]}
	}
	return st, nil
}

// send stamps and sends k datagrams (k <= batch) and returns how many left.
// now is wall-clock nanoseconds, the clock of the kernel's receive stamps.
func (st *stream) send(k int, now int64) (int, error) {
	for i := range k {
		st.out[i].stamp(now, uint32(st.s.idx), st.seq)
		st.seq++
	}
	return st.pc.WriteBatch(st.outMsg[:k], 0)
}

// drain reads what the socket holds without blocking (MSG_DONTWAIT: the
// worker's epoll said it is readable, and a worker must never park on one
// socket) and returns how many data datagrams it counted.
func (st *stream) drain(epoch time.Time) int {
	total := 0
	for {
		for i := range st.inMsg {
			st.inMsg[i].Buffers[0] = st.inBufs[i]
			st.inMsg[i].OOB = st.inOOB[i]
		}
		n, err := st.pc.ReadBatch(st.inMsg, unix.MSG_DONTWAIT)
		if err != nil || n == 0 {
			return total // EAGAIN: drained; ICMP errors: try next turn
		}
		now := time.Since(epoch)
		wall := time.Now().UnixNano() // only if the kernel gave no stamp
		got := 0
		for i := range n {
			p := incomingPayload(st.inBufs[i][:st.inMsg[i].N])
			if p == nil {
				st.rx.other++
				continue
			}
			sent, client, _, ok := readPayload(p)
			if !ok || client != uint32(st.s.idx) {
				st.rx.misrouted++
				continue
			}
			at, ok := rxTimestamp(st.inOOB[i][:st.inMsg[i].NN])
			if !ok {
				at = wall
			}
			st.rx.rtt.add(time.Duration(at - sent))
			got++
		}
		if got > 0 {
			st.rx.received += uint64(got)
			st.rx.last = now
			total += got
		}
		if n < len(st.inMsg) {
			return total // a full batch means there may be more
		}
	}
}

// tally counts arrivals across workers so the run can end as soon as every
// echo is back.
type tally struct {
	received atomic.Uint64
	sent     atomic.Uint64
	sending  atomic.Bool // true until every worker has finished sending
	allIn    chan struct{}
	once     sync.Once
}

func newTally() *tally {
	t := &tally{allIn: make(chan struct{})}
	t.sending.Store(true)
	return t
}

// check closes allIn once sending is over and everything sent came back.
func (t *tally) check() {
	if !t.sending.Load() && t.received.Load() >= t.sent.Load() {
		t.once.Do(func() { close(t.allIn) })
	}
}

// worker is one event loop over a share of the streams.
type worker struct {
	streams []*stream
	pace    *pacer
	quota   int // messages to send in all
	batch   int
	epfd    int
	events  []unix.EpollEvent

	sent     int
	failed   int
	cursor   int
	lastSend time.Duration
}

// newWorker registers the streams' sockets in an epoll set of its own
// (level-triggered), with each stream's index as the event's data. The
// worker only ever polls it with a zero timeout.
func newWorker(streams []*stream, pace *pacer, quota, batch int) (*worker, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create epoll: %w", err)
	}
	w := &worker{streams: streams, pace: pace, quota: quota, batch: batch, epfd: epfd,
		events: make([]unix.EpollEvent, min(len(streams), 256))}
	for i, st := range streams {
		raw, err := st.s.conn.SyscallConn()
		if err != nil {
			w.close()
			return nil, fmt.Errorf("raw socket: %w", err)
		}
		var cerr error
		err = raw.Control(func(fd uintptr) {
			ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
			cerr = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
		})
		if err = errors.Join(err, cerr); err != nil {
			w.close()
			return nil, fmt.Errorf("add socket to epoll: %w", err)
		}
	}
	return w, nil
}

func (w *worker) close() { _ = unix.Close(w.epfd) }

// Ticks of the loop. At 1 ms a worker sending 20 k/s sends about 20
// datagrams per turn, in batches per socket, and finds about as many
// echoes waiting.
const (
	tick     = time.Millisecond
	idleTick = 5 * time.Millisecond // once sending is over
)

// run sends until the quota is met, the deadline passes or ctx ends (then
// calls sendingDone), and receives until stop is set. It sleeps between
// turns until the next token is due, at least one tick.
func (w *worker) run(ctx context.Context, epoch time.Time, deadline time.Duration, t *tally,
	sendingDone func(), stop *atomic.Bool) {
	sending := true
	for !stop.Load() {
		pause := idleTick
		if sending {
			now := time.Since(epoch)
			if w.sent+w.failed >= w.quota || now >= deadline || ctx.Err() != nil {
				sending = false
				sendingDone()
				continue
			}
			if n := w.pace.take(now, w.quota-w.sent-w.failed); n > 0 {
				w.spread(n, epoch, t)
			}
			pause = w.pace.wait(tick)
		}
		time.Sleep(pause)
		n, err := unix.EpollWait(w.epfd, w.events, 0)
		if err != nil {
			continue // EINTR
		}
		got := 0
		for _, ev := range w.events[:n] {
			got += w.streams[ev.Fd].drain(epoch)
		}
		if got > 0 {
			t.received.Add(uint64(got))
			t.check()
		}
	}
	if sending {
		sendingDone()
	}
}

// spread sends n messages: n/len to every stream and one more to the next
// n%len streams after the cursor, in batches of at most w.batch. Each batch
// is stamped with the time it leaves, so RTTs do not include the time spent
// on the streams before it.
func (w *worker) spread(n int, epoch time.Time, t *tally) {
	each, extra := n/len(w.streams), n%len(w.streams)
	count := len(w.streams)
	if each == 0 {
		count = extra
	}
	for j := range count {
		i := (w.cursor + j) % len(w.streams)
		k := each
		if j < extra {
			k++
		}
		for k > 0 {
			b := min(k, w.batch)
			w.lastSend = time.Since(epoch)
			sent, err := w.streams[i].send(b, time.Now().UnixNano())
			if err != nil {
				sent = max(sent, 0)
			}
			w.sent += sent
			w.failed += b - sent
			t.sent.Add(uint64(sent))
			k -= b
		}
	}
	w.cursor = (w.cursor + extra) % len(w.streams)
}
