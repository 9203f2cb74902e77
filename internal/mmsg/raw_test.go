package mmsg

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.DialTCP("tcp4", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func TestRawStreamReadWriteEOFAndDeadline(t *testing.T) {
	client, server := tcpPair(t)
	r, err := NewRaw(server)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := io.ReadFull(client, buf[:5]); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("client read %q, %v", buf[:n], err)
	}
	if _, err := client.Write([]byte("back")); err != nil {
		t.Fatal(err)
	}
	if n, err := r.Read(buf); err != nil || string(buf[:n]) != "back" {
		t.Fatalf("raw read %q, %v", buf[:n], err)
	}
	_ = server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := r.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	_ = server.SetReadDeadline(time.Time{})
	client.Close()
	if _, err := r.Read(buf); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
}

// TestRawTryWrite: a message is written whole or not at all, and a message
// the kernel takes in part is finished before any other write.
func TestRawTryWrite(t *testing.T) {
	client, server := tcpPair(t)
	_ = server.SetWriteBuffer(4096)
	_ = client.SetReadBuffer(4096)
	r, _ := NewRaw(server)
	kib := bytes.Repeat([]byte("0123456789abcdef"), 64)
	fillThenWait(t, r, client, 1, func() bool { return r.TryWrite(kib) })
}

// fillThenWait calls try (which writes perTry 1 KiB messages, all or
// nothing) until the buffers are full, then writes "TAIL" with waiting, and
// checks that every message arrived whole and the waiting write after them:
// a remainder finished in the background goes first.
func fillThenWait(t *testing.T, r *Raw, client *net.TCPConn, perTry int, try func() bool) {
	t.Helper()
	kib := bytes.Repeat([]byte("0123456789abcdef"), 64)
	sent := 0
	for try() { // never blocks
		sent += perTry
		if sent > 100000 {
			t.Fatal("the send buffer never filled")
		}
	}
	tail := []byte("TAIL")
	done := make(chan error, 1)
	go func() { _, err := r.Write(tail); done <- err }()
	got := make([]byte, sent*len(kib)+len(tail))
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatalf("after %d messages: %v", sent, err)
	}
	for i := 0; i < sent; i++ {
		if chunk := got[i*len(kib) : (i+1)*len(kib)]; !bytes.Equal(chunk, kib) {
			t.Fatalf("message %d of %d arrived torn: %q...", i, sent, chunk[:32])
		}
	}
	if string(got[sent*len(kib):]) != "TAIL" {
		t.Fatalf("the waiting write came out as %q", got[sent*len(kib):])
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRawRecvFromReportsTruncation: a datagram longer than the buffer
// reports its real length, so the caller can tell it was cut.
func TestRawRecvFromReportsTruncation(t *testing.T) {
	src, dst := pair(t, "udp6", "::1")
	r, err := NewRaw(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.WriteTo([]byte("0123456789abcdefXYZ"), dst.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, _, err := r.RecvFrom(buf)
	if err != nil || n != 19 || string(buf) != "0123456789abcdef" {
		t.Fatalf("got n=%d %q (%v), want n=19 and the first 16 bytes", n, buf, err)
	}
}

func TestRawRecvFrom(t *testing.T) {
	src, dst := pair(t, "udp6", "::1")
	r, err := NewRaw(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.WriteTo([]byte("dgram"), dst.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, from, err := r.RecvFrom(buf)
	if err != nil || string(buf[:n]) != "dgram" || from != src.LocalAddr().(*net.UDPAddr).AddrPort() {
		t.Fatalf("got %q from %v: %v", buf[:n], from, err)
	}
	if a := testing.AllocsPerRun(20, func() {
		_, _ = src.WriteToUDPAddrPort([]byte("x"), dst.LocalAddr().(*net.UDPAddr).AddrPort())
		_, _, _ = r.RecvFrom(buf)
	}); a != 0 {
		t.Fatalf("%v allocations per datagram", a)
	}
}

// TestRawTryRead: nothing waiting is (0, nil), not an error and not a wait;
// data comes as it is; the end of the stream is io.EOF.
func TestRawTryRead(t *testing.T) {
	client, server := tcpPair(t)
	r, err := NewRaw(server)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fd() < 0 {
		t.Fatalf("Fd() = %d", r.Fd())
	}
	buf := make([]byte, 16)
	if n, err := r.TryRead(buf); n != 0 || err != nil {
		t.Fatalf("empty socket: %d, %v; want 0, nil", n, err)
	}
	if _, err := client.Write([]byte("ready")); err != nil {
		t.Fatal(err)
	}
	waitReadable(t, r.Fd())
	if n, err := r.TryRead(buf); err != nil || string(buf[:n]) != "ready" {
		t.Fatalf("got %q, %v", buf[:n], err)
	}
	client.Close()
	waitReadable(t, r.Fd())
	if n, err := r.TryRead(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the peer closed: %d, %v; want io.EOF", n, err)
	}
	if a := testing.AllocsPerRun(20, func() { _, _ = r.TryRead(buf) }); a != 0 {
		t.Fatalf("%v allocations per read", a)
	}
}

// waitReadable waits (poll(2), up to 10 s) until fd is readable, as the
// epoll set of a loop would report it.
func waitReadable(t *testing.T, fd int) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 10000); n != 1 || err != nil {
		t.Fatalf("descriptor %d not readable: %d, %v", fd, n, err)
	}
}

// TestRawTryWritev: several messages go out back to back in one call,
// whole or not at all, and a batch the kernel takes in part is finished,
// in order, before any other write.
func TestRawTryWritev(t *testing.T) {
	client, server := tcpPair(t)
	_ = server.SetWriteBuffer(4096)
	_ = client.SetReadBuffer(4096)
	r, _ := NewRaw(server)
	msgs := [][]byte{[]byte("first."), nil, []byte("second."), []byte("third.")}
	if !r.TryWritev(msgs) {
		t.Fatal("an empty socket refused three small messages")
	}
	got := make([]byte, len("first.second.third."))
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(client, got); err != nil || string(got) != "first.second.third." {
		t.Fatalf("got %q, %v", got, err)
	}
	if a := testing.AllocsPerRun(20, func() {
		_ = r.TryWritev(msgs)
		_, _ = io.ReadFull(client, got)
	}); a != 0 {
		t.Fatalf("%v allocations per batch", a)
	}

	// Fill the buffers with batches of three 1 KiB messages.
	kib := bytes.Repeat([]byte("0123456789abcdef"), 64)
	batch := [][]byte{kib, kib, kib}
	fillThenWait(t, r, client, len(batch), func() bool { return r.TryWritev(batch) })
}
