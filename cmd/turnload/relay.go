package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// sendSlack lets the senders spend the last tokens, which become due
// exactly at the end of --duration.
const sendSlack = 50 * time.Millisecond

// peerFor returns the echo peer: the external one, or a built-in echo the
// caller must stop.
func peerFor(o *options) (*net.UDPAddr, *echo, error) {
	if o.peer != nil {
		return o.peer, nil, nil
	}
	// Room for the payload plus anything a server might append.
	e, err := startEcho(o.echoSockets, max(o.batch, 32), o.size+128)
	if err != nil {
		return nil, nil, err
	}
	return e.addr, e, nil
}

// runRelay sends ChannelData (or Send indications) from every client
// through the server to the echo peer and back, at o.rate each way for
// o.duration, and measures what came back.
func runRelay(ctx context.Context, o options, progress io.Writer) (*report, error) {
	rep := &report{Mode: o.mode, Server: o.server.String(), Clients: o.clients}
	peer, ech, err := peerFor(&o)
	if err != nil {
		return rep, err
	}
	if ech != nil {
		defer ech.stop()
	}
	sessions, setup := setupSessions(ctx, &o, true, func(s *session) error {
		if err := s.allocate(o.lifetime); err != nil {
			return err
		}
		if o.sendIndications {
			return s.permit(peer)
		}
		return s.bind(peer)
	})
	rep.Setup = setup
	if len(sessions) == 0 {
		return rep, errNoClients
	}
	defer releaseAll(&o, sessions)
	if ctx.Err() != nil {
		return rep, fmt.Errorf("set up clients: %w", ctx.Err())
	}
	fmt.Fprintf(progress, "turnload: relay: %d clients ready, sending %.0f/s for %v\n", len(sessions), o.rate, o.duration)

	streams := make([]*stream, len(sessions))
	for i, s := range sessions {
		if streams[i], err = newStream(s, &o, peer); err != nil {
			return rep, err
		}
	}
	m, err := measureRelay(ctx, &o, streams, ech)
	if err != nil {
		return rep, err
	}
	rep.Relay, rep.Self, rep.Process = m.relay, m.self, m.server
	return rep, nil
}

// relayMeasurement is the result of one measured window.
type relayMeasurement struct {
	relay  *relayReport
	self   cpuReport
	server *serverReport
}

// measureRelay runs the readers and senders and turns their counts into a
// report. The window (and the CPU samples) starts just before the first
// send and ends when every echo is back or o.grace after the last send.
func measureRelay(ctx context.Context, o *options, streams []*stream, ech *echo) (relayMeasurement, error) {
	workers, err := newWorkers(o, streams)
	if err != nil {
		return relayMeasurement{}, err
	}
	defer func() {
		for _, w := range workers {
			w.close()
		}
	}()
	t := newTally()
	probe := serverProbe{pid: o.serverPID}
	srv0, srvOK := probe.sample()
	self0 := selfCPU()
	echo0 := uint64(0)
	if ech != nil {
		echo0 = ech.in.Load()
	}
	epoch := time.Now()
	var stop atomic.Bool
	var sending, running sync.WaitGroup
	for _, w := range workers {
		sending.Add(1)
		running.Add(1)
		go func() {
			defer running.Done()
			w.run(ctx, epoch, o.duration+sendSlack, t, sending.Done, &stop)
		}()
	}
	sending.Wait()
	t.sending.Store(false)
	t.check()
	grace := time.NewTimer(o.grace)
	select {
	case <-t.allIn:
	case <-grace.C:
	case <-ctx.Done():
	}
	grace.Stop()
	window := time.Since(epoch)
	selfUsed := selfCPU() - self0
	srv := probe.window(srv0, srvOK, 0)
	stop.Store(true)
	running.Wait()

	r := &relayReport{Framing: "channel", Size: o.size, OfferedRate: o.rate, Duration: o.duration.Seconds()}
	if o.sendIndications {
		r.Framing = "send-indication"
	}
	var lastSend, lastRecv time.Duration
	for _, w := range workers {
		r.Sent += uint64(w.sent)
		r.SendFailed += uint64(w.failed)
		lastSend = max(lastSend, w.lastSend)
	}
	var rtt hist
	for _, st := range streams {
		r.Received += st.rx.received
		r.Other += st.rx.other
		r.Misrouted += st.rx.misrouted
		lastRecv = max(lastRecv, st.rx.last)
		rtt.merge(&st.rx.rtt)
	}
	// Each message crosses the server twice. With the built-in echo the
	// first crossings are counted exactly; with an external peer, a
	// message lost on the way out is assumed to have crossed once.
	r.RelayedPackets = r.Sent + r.Received
	if ech != nil {
		r.EchoIn = ech.in.Load() - echo0
		r.RelayedPackets = r.EchoIn + r.Received
	}
	if lastSend > 0 {
		r.SentRate = float64(r.Sent) / lastSend.Seconds()
	}
	if active := max(lastSend, lastRecv); active > 0 {
		r.DeliveredRate = float64(r.Received) / active.Seconds()
	}
	if r.Sent > 0 {
		r.LossPct = 100 * float64(r.Sent-min(r.Sent, r.Received)) / float64(r.Sent)
	}
	r.WindowSeconds = window.Seconds()
	r.RTTAvgMs, r.RTTP50Ms, r.RTTP99Ms, r.RTTMaxMs = ms(rtt.mean()), ms(rtt.quantile(0.5)), ms(rtt.quantile(0.99)), ms(rtt.max)
	if srv != nil {
		srv.CPUPerPacketUS = perPacketUS(time.Duration(srv.CPUSeconds*float64(time.Second)), r.RelayedPackets)
	}
	return relayMeasurement{
		relay:  r,
		self:   cpuReport{CPUSeconds: selfUsed.Seconds(), CPUPerPacketUS: perPacketUS(selfUsed, r.RelayedPackets)},
		server: srv,
	}, nil
}

// newWorkers deals the streams out to o.workers event loops, each with an
// equal share of the rate and of the total count (rate x duration).
func newWorkers(o *options, streams []*stream) ([]*worker, error) {
	n := min(o.workers, len(streams))
	total := int(o.rate*o.duration.Seconds() + 0.5)
	shares := make([][]*stream, n)
	for i, st := range streams {
		shares[i%n] = append(shares[i%n], st)
	}
	workers := make([]*worker, 0, n)
	for i := range n {
		quota := total / n
		if i < total%n {
			quota++
		}
		w, err := newWorker(shares[i], newPacer(o.rate/float64(n), burstWindow, 0), quota, o.batch)
		if err != nil {
			for _, w := range workers {
				w.close()
			}
			return nil, err
		}
		workers = append(workers, w)
	}
	return workers, nil
}

// burstWindow caps how far a sender may catch up after a stall (a GC
// pause, a descheduled thread): 20 ms of its rate, sent at once. A longer
// stall is not made up for: it would arrive as a burst that real traffic
// never sends, and it shows as a sent rate below the offered one.
const burstWindow = 20 * time.Millisecond
