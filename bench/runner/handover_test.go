package main

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReadHandoverLog reads the figures from lines as turnd's text log
// (slog's text handler) writes them: the old process's "handed over" for
// the successor asked about, not an earlier one's, and "took over".
func TestReadHandoverLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	log.Info("handed over", "successor", 1111, "allocations_moved", 5, "allocations_stayed", 0, "frozen", 3*time.Millisecond)
	log.Info("took over", "allocations", 5)
	log.Info("handed over", "successor", 2222, "allocations_moved", 10001, "allocations_stayed", 1, "frozen", 123456*time.Microsecond)
	log.Info("took over", "allocations", 10001)
	path := filepath.Join(t.TempDir(), "turnd.out")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	h := Handover{NewPID: 2222}
	if err := readHandoverLog(path, &h); err != nil {
		t.Fatal(err)
	}
	if h.Moved != 10001 || h.FrozenMs != 123.456 || h.TookOver != 10001 {
		t.Errorf("moved %d, frozen %v ms, took over %d; want 10001, 123.456, 10001", h.Moved, h.FrozenMs, h.TookOver)
	}
	if err := readHandoverLog(path, &Handover{NewPID: 3333}); err == nil {
		t.Error("no error for a successor the log does not name")
	}
}

func TestUDPCounters(t *testing.T) {
	m, err := udpCounters()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["RcvbufErrors"]; !ok {
		t.Errorf("no RcvbufErrors in %v", m)
	}
}

// TestSocketDrops counts a socket of this process that dropped datagrams:
// a tiny receive buffer, never read.
func TestSocketDrops(t *testing.T) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadBuffer(1) // the kernel's minimum
	s, err := net.DialUDP("udp4", nil, c.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before, err := socketDrops(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		_, _ = s.Write(make([]byte, 1000))
	}
	after, err := socketDrops(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 100 {
		t.Errorf("drops %d -> %d after 200 datagrams into a minimal buffer, want most of them counted", before, after)
	}
}
