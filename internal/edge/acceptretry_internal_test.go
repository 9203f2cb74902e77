package edge

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// failingListener fails its first accepts with errs, then hands out conn,
// then waits for Close.
type failingListener struct {
	errs   []error
	conn   net.Conn
	closed chan struct{}
}

func (l *failingListener) Accept() (net.Conn, error) {
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		return nil, err
	}
	if c := l.conn; c != nil {
		l.conn = nil
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *failingListener) Close() error { close(l.closed); return nil }
func (l *failingListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}
}

// TestAcceptSurvivesTemporaryErrors: running out of descriptors, or a
// connection aborted before accept, must not end a stream listener
// (ServeStreams' accept loop, a sorting port's) for good; a closed
// listener does end it.
func TestAcceptSurvivesTemporaryErrors(t *testing.T) {
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	aborted := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ECONNABORTED)}
	fl := &failingListener{errs: []error{emfile, emfile, aborted}, conn: server, closed: make(chan struct{})}
	ln := (&streamConns{}).track(fl)
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("Accept after temporary errors: %v, want the next connection", err)
	}
	if c.(*trackedConn).Conn != server {
		t.Fatalf("Accept returned %v, want the listener's connection", c)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		done <- err
	}()
	_ = ln.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept on a closed listener: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waiting 5 s after Close")
	}
}

func TestNextAcceptBackoff(t *testing.T) {
	var d time.Duration
	var got []time.Duration
	for range 10 {
		d = nextAcceptBackoff(d)
		got = append(got, d)
	}
	if got[0] != 5*time.Millisecond || got[1] != 10*time.Millisecond || got[9] != maxAcceptBackoff {
		t.Fatalf("backoff %v, want 5ms doubling up to %v", got, maxAcceptBackoff)
	}
}

// TestAcceptReturnsPermanentErrors: a listener that was shut down (EINVAL
// from accept) is dead, and the error must reach the server so that turnd
// reports it instead of retrying for ever.
func TestAcceptReturnsPermanentErrors(t *testing.T) {
	einval := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EINVAL)}
	fl := &failingListener{errs: []error{einval}, closed: make(chan struct{})}
	ln := (&streamConns{}).track(fl)
	done := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("Accept: %v, want EINVAL", err)
		}
	case <-time.After(5 * time.Second):
		_ = ln.Close()
		t.Fatal("Accept retried a shut-down listener's error")
	}
}
