package mmsg

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func adopt(t testing.TB, c *net.UDPConn) *Socket {
	t.Helper()
	s, err := Adopt(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// epollWatches returns, for every epoll set of this process, the events it
// watches descriptor fd for (from /proc/self/fdinfo).
func epollWatches(t *testing.T, fd int) []uint64 {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var found []uint64
	for _, e := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		f, err := os.Open(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// "tfd:       12 events:       19 data: ..."
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[0] != "tfd:" || fields[1] != strconv.Itoa(fd) || fields[2] != "events:" {
				continue
			}
			ev, err := strconv.ParseUint(fields[3], 16, 64)
			if err != nil {
				t.Fatalf("fdinfo %q: %v", sc.Text(), err)
			}
			found = append(found, ev)
		}
		f.Close()
	}
	return found
}

const (
	epollIn  = 0x1
	epollOut = 0x4
)

// waitReading returns once a reader of s is in its read (it holds waitMu
// throughout) and the wait set exists. There is no event for that; the
// spin is bounded.
func waitReading(t *testing.T, s *Socket) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
		s.mu.RLock()
		opened := s.wait != nil
		s.mu.RUnlock()
		if !opened {
			continue
		}
		if !s.waitMu.TryLock() {
			return
		}
		s.waitMu.Unlock()
	}
	t.Fatal("no reader came")
}

// TestSocketOutOfRuntimePoller: a Socket is watched by no epoll set for
// EPOLLOUT — the point of the type: every datagram sent would otherwise
// wake the runtime's poller. The control case shows the check can see the
// runtime's registration of a plain *net.UDPConn.
func TestSocketOutOfRuntimePoller(t *testing.T) {
	plain, other := pair(t, "udp4", "127.0.0.1")
	rc, err := plain.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var plainFD int
	_ = rc.Control(func(fd uintptr) { plainFD = int(fd) })
	if evs := epollWatches(t, plainFD); len(evs) == 0 || evs[0]&epollOut == 0 {
		t.Fatalf("control: the runtime's poller watches a *net.UDPConn for %x, want EPOLLOUT among them", evs)
	}

	s := adopt(t, plain)
	if evs := epollWatches(t, s.Fd()); len(evs) != 0 {
		t.Fatalf("a fresh Socket is watched for %x, want by nobody", evs)
	}
	// A read that waits creates the private set: EPOLLIN only.
	done := make(chan error, 1)
	go func() {
		_, _, err := s.ReadFromUDPAddrPort(make([]byte, 64))
		done <- err
	}()
	waitReading(t, s)
	// The kernel adds EPOLLERR|EPOLLHUP to every registration: 0x19.
	if evs := epollWatches(t, s.Fd()); len(evs) != 1 || evs[0]&epollIn == 0 || evs[0]&epollOut != 0 {
		t.Fatalf("a reading Socket is watched for %x, want EPOLLIN without EPOLLOUT, by its own set alone", evs)
	}
	if _, err := other.WriteTo([]byte("x"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSocketReadWaitsCloseWakes: a read waits for its datagram; Close ends
// a waiting read with net.ErrClosed, and later calls fail the same way.
func TestSocketReadWaitsCloseWakes(t *testing.T) {
	a, b := pair(t, "udp6", "::1")
	s := adopt(t, a)
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, from, err := s.ReadFromUDPAddrPort(buf)
		got <- fmt.Sprintf("%q from %v, err %v", buf[:n], from, err)
	}()
	if _, err := b.WriteTo([]byte("late"), s.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%q from %v, err <nil>", "late", b.LocalAddr().(*net.UDPAddr).AddrPort())
	if g := <-got; g != want {
		t.Fatalf("read %s, want %s", g, want)
	}

	errc := make(chan error, 1)
	go func() {
		_, _, err := s.ReadFrom(make([]byte, 64))
		errc <- err
	}()
	waitReading(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("waiting read ended with %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the waiting read")
	}
	if _, err := s.WriteTo([]byte("x"), b.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after Close: %v", err)
	}
	if err := s.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

// TestSocketDeadlines: a read deadline ends a wait with
// os.ErrDeadlineExceeded, before or after the wait set exists; clearing it
// lets reads wait again.
func TestSocketDeadlines(t *testing.T) {
	a, b := pair(t, "udp4", "127.0.0.1")
	s := adopt(t, a)
	for i := 0; i < 2; i++ { // first before the wait set exists, then after
		if err := s.SetReadDeadline(time.Now().Add(30 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.ReadFrom(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read %d past its deadline: %v", i, err)
		}
	}
	if err := s.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = b.WriteTo([]byte("y"), s.LocalAddr()) }()
	if n, _, err := s.ReadFrom(make([]byte, 64)); err != nil || n != 1 {
		t.Fatalf("read after clearing the deadline: %d, %v", n, err)
	}
}

// TestSocketBatches: Reader and Writer serve Sockets as they serve
// *net.UDPConns, both families.
func TestSocketBatches(t *testing.T) {
	for _, tc := range []struct{ network, ip string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}} {
		t.Run(tc.network, func(t *testing.T) {
			a, b := pair(t, tc.network, tc.ip)
			src, dst := adopt(t, a), adopt(t, b)
			w, err := NewWriter(src, 4)
			if err != nil {
				t.Fatal(err)
			}
			to := dst.LocalAddr().(*net.UDPAddr).AddrPort()
			for i := 0; i < 6; i++ {
				if err := w.Add([]byte(fmt.Sprintf("datagram %d", i)), to); err != nil {
					t.Fatal(err)
				}
			}
			if dropped, err := w.Flush(); err != nil || dropped != 0 {
				t.Fatalf("flush: %d dropped, %v", dropped, err)
			}
			r, err := NewReader(dst, 4, 64, 0)
			if err != nil {
				t.Fatal(err)
			}
			_ = dst.SetReadDeadline(time.Now().Add(5 * time.Second))
			from := src.LocalAddr().(*net.UDPAddr).AddrPort()
			for i := 0; i < 6; i++ {
				buf, n, got, err := r.Next()
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf("datagram %d", i); string(buf[:n]) != want || got != from {
					t.Fatalf("got %q from %v, want %q from %v", buf[:n], got, want, from)
				}
			}
		})
	}
}

// TestSocketPingPong: one datagram at a time, thousands of times, each
// answered within a second — a reader that could miss the wake-up of a
// datagram arriving between its last empty read and its wait (the runtime
// resets readiness when a wait starts) stalls here.
func TestSocketPingPong(t *testing.T) {
	a, client := pair(t, "udp4", "127.0.0.1")
	s := adopt(t, a)
	r, err := NewReader(s, 8, 64, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			buf, n, from, err := r.Next()
			if err != nil {
				return // closed at the end of the test
			}
			if _, err := s.WriteToUDPAddrPort(buf[:n], from); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64)
	for i := 0; i < 5000; i++ {
		msg := strconv.Itoa(i)
		if _, err := client.WriteTo([]byte(msg), s.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		_ = client.SetReadDeadline(time.Now().Add(time.Second))
		n, err := client.Read(buf)
		if err != nil || string(buf[:n]) != msg {
			t.Fatalf("round trip %d: %q, %v", i, buf[:n], err)
		}
	}
}

// TestListenUDPErrors: ListenUDP reports what net.ListenPacket would.
func TestListenUDPErrors(t *testing.T) {
	s, err := ListenUDP("udp4", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = ListenUDP("udp4", s.LocalAddr().String(), nil)
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("second bind of %v: %v, want address already in use", s.LocalAddr(), err)
	}
	if _, err := ListenUDP("udp4", "not an address", nil); err == nil {
		t.Fatal("bad address: no error")
	}
}
