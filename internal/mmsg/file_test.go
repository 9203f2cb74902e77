package mmsg

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// A socket passed on as a file serves the same address and the same
// queue: a datagram sent before the hand-over is read by the copy.
func TestFileRoundTrip(t *testing.T) {
	a, err := ListenUDP("udp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	peer, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if _, err := peer.WriteTo([]byte("queued"), a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	f, err := a.File()
	if err != nil {
		t.Fatal(err)
	}
	b, err := FromFile(f)
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.LocalAddr().String() != a.LocalAddr().String() {
		t.Fatalf("copy bound to %v, want %v", b.LocalAddr(), a.LocalAddr())
	}
	// Closing the first copy leaves the socket open in the second.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, from, err := b.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "queued" || from.Port() != uint16(peer.LocalAddr().(*net.UDPAddr).Port) {
		t.Fatalf("read %q from %v, %v; want the queued datagram", buf[:n], from, err)
	}
	if _, err := a.File(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("File of a closed socket: %v", err)
	}
}

func TestFromFileRefusesOtherDescriptors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tf, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, f := range []*os.File{tf, r} {
		if s, err := FromFile(f); err == nil {
			s.Close()
			t.Fatalf("FromFile(%s) took it", f.Name())
		}
	}
}
