package mmsg

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
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
			w, err := NewWriter(src, 4)
			if err != nil {
				t.Fatal(err)
			}
			to := dst.LocalAddr().(*net.UDPAddr).AddrPort()
			var msgs [][]byte
			for i := 0; i < 10; i++ { // more than one batch: Add flushes when full
				msgs = append(msgs, []byte(fmt.Sprintf("datagram %d", i)))
				if err := w.Add(msgs[i], to); err != nil {
					t.Fatal(err)
				}
			}
			if dropped, err := w.Flush(); err != nil || dropped != 0 || w.Pending() != 0 {
				t.Fatalf("flush: %v, pending %d", err, w.Pending())
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

func TestMappedDestinationOnDualStackSocket(t *testing.T) {
	src, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6unspecified})
	if err != nil {
		t.Fatal("no dual-stack socket:", err)
	}
	defer src.Close()
	dst, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	w, _ := NewWriter(src, 2)
	_ = w.Add([]byte("hi"), dst.LocalAddr().(*net.UDPAddr).AddrPort())
	if _, err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	_ = dst.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := dst.Read(buf); err != nil || string(buf[:n]) != "hi" {
		t.Fatalf("%q %v", buf[:n], err)
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
	w, _ := NewWriter(src, 8)
	r, _ := NewReader(dst, 8, 256, 0)
	to := dst.LocalAddr().(*net.UDPAddr).AddrPort()
	payload := make([]byte, 100)
	_ = dst.SetReadDeadline(time.Now().Add(5 * time.Second))
	allocs := testing.AllocsPerRun(50, func() {
		for i := 0; i < 8; i++ {
			_ = w.Add(payload, to)
		}
		_, _ = w.Flush()
		for i := 0; i < 8; i++ {
			if _, _, _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch", allocs)
	}
}

// TestFlushCountsRefusedDatagrams: a datagram the kernel refuses (port 0)
// is dropped and counted; the rest of the batch still goes out.
func TestFlushCountsRefusedDatagrams(t *testing.T) {
	src, dst := pair(t, "udp4", "127.0.0.1")
	w, err := NewWriter(src, 4)
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Add([]byte("lost"), netip.MustParseAddrPort("127.0.0.1:0"))
	_ = w.Add([]byte("kept"), dst.LocalAddr().(*net.UDPAddr).AddrPort())
	dropped, err := w.Flush()
	if dropped != 1 || err == nil {
		t.Fatalf("Flush: %d dropped, %v; want 1 and the kernel's error", dropped, err)
	}
	buf := make([]byte, 16)
	_ = dst.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := dst.Read(buf); err != nil || string(buf[:n]) != "kept" {
		t.Fatalf("got %q, %v", buf[:n], err)
	}
}
