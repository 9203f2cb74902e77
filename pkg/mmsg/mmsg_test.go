package mmsg

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

func pair(t testing.TB, network, ip string) (*net.UDPConn, *net.UDPConn) {
	t.Helper()
	a, err := net.ListenUDP(network, &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := net.ListenUDP(network, &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestBatchRoundTrip(t *testing.T) {
	for _, tc := range []struct{ network, ip string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}} {
		t.Run(tc.network, func(t *testing.T) {
			src, dst := pair(t, tc.network, tc.ip)
			var msgs [][]byte
			for i := 0; i < 10; i++ { // more than one batch of 3
				msgs = append(msgs, []byte(fmt.Sprintf("datagram %d", i)))
				if _, err := src.WriteTo(msgs[i], dst.LocalAddr()); err != nil {
					t.Fatal(err)
				}
			}
			r, err := NewReader(dst, 3, 64, 4)
			if err != nil {
				t.Fatal(err)
			}
			from := src.LocalAddr().(*net.UDPAddr).AddrPort()
			_ = dst.SetReadDeadline(time.Now().Add(2 * time.Second))
			for i := 0; i < 10; i++ {
				buf, n, got, err := r.Next()
				if err != nil {
					t.Fatal(err)
				}
				if string(buf[4:4+n]) != string(msgs[i]) || got != from {
					t.Fatalf("datagram %d: %q from %v, want %q from %v", i, buf[4:4+n], got, msgs[i], from)
				}
			}
		})
	}
}

func TestDeadlineAndClose(t *testing.T) {
	_, dst := pair(t, "udp4", "127.0.0.1")
	r, _ := NewReader(dst, 2, 64, 0)
	_ = dst.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, _, _, err := r.Next(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	_ = dst.SetReadDeadline(time.Time{})
	done := make(chan error, 1)
	go func() { _, _, _, err := r.Next(); done <- err }()
	dst.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("after close: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Next did not return after Close")
	}
}

func TestNoAllocations(t *testing.T) {
	src, dst := pair(t, "udp4", "127.0.0.1")
	r, _ := NewReader(dst, 8, 256, 0)
	payload := make([]byte, 100)
	_ = dst.SetReadDeadline(time.Now().Add(5 * time.Second))
	// WriteTo allocates its sockaddr: measure it alone and subtract.
	send := func() {
		for i := 0; i < 8; i++ {
			_, _ = src.WriteTo(payload, dst.LocalAddr())
		}
	}
	sendAllocs := testing.AllocsPerRun(50, send)
	r.Next() // warm-up
	allocs := testing.AllocsPerRun(50, func() {
		send()
		for i := 0; i < 8; i++ {
			if _, _, _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs-sendAllocs >= 1 {
		t.Fatalf("%v allocations per batch received", allocs-sendAllocs)
	}
}
