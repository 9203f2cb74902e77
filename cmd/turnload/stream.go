package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// streamSteady is the progress line stream mode prints once the stream's
// first second of echoes is back: a driver acts on a steady stream (such as
// an upgrade of the server) when it reads it.
const streamSteady = "turnload: stream: steady"

// runStream holds o.clients idle allocations, each with a channel bound to
// the peer, beside one more allocation that streams: a numbered message
// every 1/o.rate s through the server to the echo peer and back, for
// o.duration. It reports what came back and the longest silence between
// two echoes.
func runStream(ctx context.Context, o options, progress io.Writer) (*report, error) {
	rep := &report{Mode: o.mode, Server: o.server.String(), Clients: o.clients}
	peer, ech, err := peerFor(&o)
	if err != nil {
		return rep, err
	}
	if ech != nil {
		defer ech.stop()
	}
	prepare := func(s *session) error {
		if err := s.allocate(o.lifetime); err != nil {
			return err
		}
		return s.bind(peer)
	}
	var idle []*session
	if o.clients > 0 {
		idle, rep.Setup = setupSessions(ctx, &o, false, prepare)
		defer releaseAll(&o, idle)
	}
	s, err := dialSession(o.clients, &o, true)
	if err != nil {
		return rep, err
	}
	defer s.close()
	if err := prepare(s); err != nil {
		return rep, fmt.Errorf("set up the stream's allocation: %w", err)
	}
	defer func() { _ = s.release() }()
	if ctx.Err() != nil {
		return rep, fmt.Errorf("set up clients: %w", ctx.Err())
	}
	fmt.Fprintf(progress, "turnload: stream: %d idle allocations held, streaming %.0f/s for %v\n", len(idle), o.rate, o.duration)
	probe := serverProbe{pid: o.serverPID}
	srv0, srvOK := probe.sample()
	self0 := selfCPU()
	rep.Stream, err = runOneStream(ctx, &o, s, progress)
	rep.Self = cpuReport{CPUSeconds: (selfCPU() - self0).Seconds()}
	rep.Process = probe.window(srv0, srvOK, 0)
	return rep, err
}

// runOneStream sends the numbered messages on s's channel and reads their
// echoes, until every one is back or o.grace after the last send.
func runOneStream(ctx context.Context, o *options, s *session, progress io.Writer) (*streamReport, error) {
	interval := time.Duration(float64(time.Second) / o.rate)
	total := int(o.rate*o.duration.Seconds() + 0.5)
	g := newGapTracker(total)
	var rtt hist
	steady := uint64(o.rate) // a second's worth of echoes
	done := make(chan error, 1)
	allIn := make(chan struct{})
	// The control's transactions left a read deadline on the socket.
	if err := s.conn.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("clear read deadline: %w", err)
	}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := s.conn.Read(buf)
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					err = nil // stopped below
				}
				done <- err
				return
			}
			at := time.Now()
			sent, _, seq, ok := readPayload(incomingPayload(buf[:n]))
			if !ok {
				continue // a late STUN response
			}
			before := g.received
			g.arrive(seq, at)
			rtt.add(at.Sub(time.Unix(0, sent)))
			if before < steady && g.received == steady {
				fmt.Fprintln(progress, streamSteady)
			}
			if g.received == uint64(total) {
				close(allIn)
			}
		}
	}()

	f := newChannelFrame(firstChannel, o.size)
	r := &streamReport{Rate: o.rate, Size: o.size}
	tick := time.NewTicker(interval)
	start := time.Now()
	for i := 0; i < total && ctx.Err() == nil; i++ {
		<-tick.C
		f.stamp(time.Now().UnixNano(), uint32(s.idx), uint32(i))
		if _, err := s.conn.Write(f.buf); err != nil {
			r.SendFailed++
			continue
		}
		r.Sent++
	}
	tick.Stop()
	grace := time.NewTimer(o.grace)
	select {
	case <-allIn:
	case <-grace.C:
	case <-ctx.Done():
	}
	grace.Stop()
	_ = s.conn.SetReadDeadline(time.Now()) // stops the reader
	err := <-done
	_ = s.conn.SetReadDeadline(time.Time{})

	r.Seconds = time.Since(start).Seconds()
	r.Received, r.Duplicates = g.received, g.duplicates
	if r.Sent > 0 {
		r.LossPct = 100 * float64(r.Sent-min(r.Sent, r.Received)) / float64(r.Sent)
	}
	r.MaxGapMs = ms(g.maxGap)
	if !g.maxGapFrom.IsZero() {
		r.MaxGapFromUnixNano = g.maxGapFrom.UnixNano()
	}
	r.RTTMaxMs, r.RTTP50Ms = ms(rtt.max), ms(rtt.quantile(0.5))
	if err != nil {
		return r, fmt.Errorf("read the stream: %w", err)
	}
	return r, nil
}
