package edge_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
)

// fakeTimers is StreamOptions.AfterFunc on a fake clock: the test fires
// the timers it wants.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
	armed  chan struct{} // a signal per timer armed
}

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (ft *fakeTimers) afterFunc(d time.Duration, f func()) func() bool {
	ft.mu.Lock()
	tm := &fakeTimer{d: d, f: f}
	ft.timers = append(ft.timers, tm)
	ft.mu.Unlock()
	ft.armed <- struct{}{}
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := !tm.stopped
		tm.stopped = true
		return was
	}
}

// next waits for the next timer to be armed and returns it.
func (ft *fakeTimers) next(t *testing.T) *fakeTimer {
	t.Helper()
	select {
	case <-ft.armed:
	case <-time.After(ioTimeout):
		t.Fatal("no idle timer was armed")
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.timers[len(ft.timers)-1]
}

func (ft *fakeTimers) isStopped(tm *fakeTimer) bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return tm.stopped
}

// TestIdleTimeoutOnlyWithoutAllocation: idle_connection_timeout runs from
// accept, stops while the connection holds an allocation (Idle(false)),
// runs again from its end (Idle(true)); a timer disarmed meanwhile that
// fires anyway closes nothing, the current one closes the connection.
func TestIdleTimeoutOnlyWithoutAllocation(t *testing.T) {
	const idle = 30 * time.Second
	ft := &fakeTimers{armed: make(chan struct{}, 8)}
	r := newRecorder()
	r.serve = func(msg []byte, from *bindings.Client) {
		switch {
		case bytes.Contains(msg, []byte("allocated")):
			from.Stream.Idle(false)
		case bytes.Contains(msg, []byte("released")):
			from.Stream.Idle(true)
		}
		from.Send(msg[:20])
	}
	e, s := ownStreams(t, edge.Listen{TCP: []string{"127.0.0.1:0"}}, edge.StreamOptions{Handler: r.handler(), AfterFunc: ft.afterFunc})
	e.SetIdleTimeout(idle)
	client := dial(t, s.TCPAddrs()[0])
	atAccept := ft.next(t)
	if atAccept.d != idle {
		t.Fatalf("idle timer of %v, want %v", atAccept.d, idle)
	}
	ask := func(tag string) {
		t.Helper()
		msg := request(t, stun.MethodBinding, testUser, nil, false, stun.NewSoftware(tag))
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, client, 20, 20); !bytes.Equal(got, msg[:20]) {
			t.Fatalf("%s: answer %x, want %x", tag, got, msg[:20])
		}
	}
	ask("allocated")
	if !ft.isStopped(atAccept) {
		t.Fatal("the idle timer still runs while the connection holds an allocation")
	}
	ask("released")
	current := ft.next(t)
	atAccept.f() // disarmed, and fires late: nothing happens
	ask("still open")
	current.f()
	if _, err := client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("client Read after the idle timeout = %v, want EOF", err)
	}
}

// TestStreamAcceptFailureIsReported: an accept loop that ends before Stop
// is a deaf address; Failed says so, and ServeStreams returns the error.
func TestStreamAcceptFailureIsReported(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := edge.New(nil)
	served := make(chan error, 1)
	go func() { served <- e.ServeStreams(ln, edge.StreamOptions{Handler: newRecorder().handler()}) }()
	_ = ln.Close()
	err = <-served
	if err == nil {
		t.Fatal("ServeStreams on a closed listener returned nil")
	}
	select {
	case failed := <-e.Failed():
		if failed.Error() != err.Error() {
			t.Errorf("Failed = %v, want %v", failed, err)
		}
	default:
		t.Fatal("Failed never reported the dead accept loop")
	}
}
