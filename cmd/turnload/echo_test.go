package main

import (
	"fmt"
	"net"
	"testing"
	"time"
)

// TestEcho sends datagrams from several sockets (so the kernel spreads
// them over the SO_REUSEPORT group) and expects each back, unchanged, from
// the echo's one address.
func TestEcho(t *testing.T) {
	e, err := startEcho(2, 8, 256)
	if err != nil {
		t.Fatal(err)
	}
	defer e.stop()
	const clients, each = 8, 5
	for c := range clients {
		conn, err := net.DialUDP("udp", nil, e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for i := range each {
			msg := fmt.Sprintf("client %d message %d", c, i)
			if _, err := conn.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			// A read deadline bounds the test if the echo is broken; it
			// is not used to wait for anything.
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 256)
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("read echo: %v", err)
			}
			if string(buf[:n]) != msg {
				t.Errorf("got %q, want %q", buf[:n], msg)
			}
		}
	}
	if got := e.in.Load(); got != clients*each {
		t.Errorf("echo counted %d in, want %d", got, clients*each)
	}
}
