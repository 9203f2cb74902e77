package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/bindings"
)

// TestPauseResumeLosesNothing: datagrams being read when Pause comes, and
// those that arrive while paused (queued in the kernel, not read), all
// reach the client once after Resume.
func TestPauseResumeLosesNothing(t *testing.T) {
	const phase = 40
	r := newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1)})
	relayed := r.open(t, bindings.Want{Families: bindings.V4}).Addr[0]
	r.bind()
	got := collect(r.client, 3*phase+2)

	sendSeq(t, r.peer4, relayed, 0, phase)
	pause(t, r.rl)
	pause(t, r.rl) // a second Pause changes nothing
	atPause := r.route.Usage.Usage().FromPeerPackets
	sendSeq(t, r.peer4, relayed, phase, 2*phase)
	if n := r.route.Usage.Usage().FromPeerPackets; n != atPause {
		t.Errorf("relayed %d datagrams while paused", n-atPause)
	}
	r.rl.Resume()
	sendSeq(t, r.peer4, relayed, 2*phase, 3*phase)
	sendEnd(t, r.peer4, relayed)
	checkOnce(t, <-got, 3*phase)
}

// TestPauseGivesUpWithItsContext: a loop held mid-round (here by a ready
// callback that blocks) keeps Pause waiting; Pause returns its context's
// error when that ends, nothing may be exported, and Resume restores the
// service.
func TestPauseGivesUpWithItsContext(t *testing.T) {
	r := newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1)})
	relayed := r.open(t, bindings.Want{Families: bindings.V4}).Addr[0]
	r.bind()
	loop := Loop{d: r.sock(0).loop} // the route's loop: its round holds the route's socket

	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	entered, released := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(released) })
	t.Cleanup(release) // before the relay closes: Close waits for the callback
	if err := loop.Watch(p[0], func() bool {
		close(entered)
		<-released
		return false
	}, func() {}); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	<-entered

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.rl.Pause(ctx) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Pause with its context cancelled: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		release()
		t.Fatal("Pause did not return when its context ended")
	}
	if _, err := r.routes.Export(r.route); !errors.Is(err, ErrNotPaused) {
		t.Fatalf("export after a failed Pause: %v, want ErrNotPaused", err)
	}
	release()
	r.rl.Resume()

	if _, err := r.peer4.WriteToUDPAddrPort([]byte("after"), relayed); err != nil {
		t.Fatal(err)
	}
	if b, _ := read(t, r.client); string(b[4:]) != "after" {
		t.Fatalf("client got %q after Resume", b)
	}
}

// TestLoopsStartedWhilePausedStartParked: a Pause before any loop exists
// returns at once, and the loops the first Open starts meanwhile read
// nothing until Resume.
func TestLoopsStartedWhilePausedStartParked(t *testing.T) {
	r := newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1)})
	pause(t, r.rl)
	relayed := r.open(t, bindings.Want{Families: bindings.V4}).Addr[0]
	r.bind()
	files, err := r.routes.Export(r.route)
	if err != nil {
		t.Fatalf("export a route opened while paused: %v", err)
	}
	files.Close()
	for i, d := range r.rl.loops {
		d.mu.Lock()
		paused := d.paused
		d.mu.Unlock()
		if !paused {
			t.Fatalf("loop %d started while paused is reading", i)
		}
	}
	if _, err := r.peer4.WriteToUDPAddrPort([]byte("held"), relayed); err != nil {
		t.Fatal(err)
	}
	r.rl.Resume()
	if b, _ := read(t, r.client); string(b[4:]) != "held" {
		t.Fatalf("client got %q after Resume", b)
	}
}

// TestPauseMidRoundFlushesWhatWasRead: a Pause that comes while a round is
// under way (here from a ready callback, which runs without the loop's
// lock, after the round read a relay socket's datagram) lets the round
// write what it read before the loop parks.
func TestPauseMidRoundFlushesWhatWasRead(t *testing.T) {
	r := newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1)})
	relayed := r.open(t, bindings.Want{Families: bindings.V4}).Addr[0]
	r.bind()
	d := r.sock(0).loop
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	paused := make(chan error, 1)
	ready := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		go func() { defer cancel(); paused <- r.rl.Pause(ctx) }()
		for { // until Pause has reached this loop: it takes the lock this callback runs without
			d.mu.Lock()
			asked := d.paused
			d.mu.Unlock()
			if asked {
				return false
			}
			runtime.Gosched()
		}
	}
	if err := (Loop{d: d}).Watch(p[0], ready, func() {}); err != nil {
		t.Fatal(err)
	}

	// Parked, so that one epoll_wait finds the relay socket ready, then the pipe.
	pause(t, r.rl)
	sendSeq(t, r.peer4, relayed, 0, 3)
	if _, err := unix.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	r.rl.Resume()
	if err := <-paused; err != nil {
		t.Fatal(err)
	}
	if b, _ := read(t, r.client); binary.BigEndian.Uint32(b[4:]) != 0 {
		t.Fatalf("first datagram after the mid-round Pause: %x", b)
	}
	got := collect(r.client, 5)
	r.rl.Resume()
	sendEnd(t, r.peer4, relayed)
	seen := <-got
	if seen[1] != 1 || seen[2] != 1 || seen[endOfStream] != 1 {
		t.Fatalf("after Resume: %v, want 1, 2 and the end once each", seen)
	}
}
