package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// stuckWriter blocks every Write until released, like a pipe nobody reads.
type stuckWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (s *stuckWriter) Write(p []byte) (int, error) {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *stuckWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func TestLogWriterNeverBlocks(t *testing.T) {
	out := &stuckWriter{release: make(chan struct{})}
	w := newLogWriter(out, 8)
	w.ReportDropsTo(slog.New(slog.NewTextHandler(w, nil)))
	const lines = 100
	wrote := make(chan struct{})
	go func() {
		for i := 0; i < lines; i++ {
			fmt.Fprintf(w, "line %d\n", i)
		}
		close(wrote)
	}()
	select {
	case <-wrote:
	case <-time.After(5 * time.Second):
		t.Fatal("Write blocked behind a stuck stderr")
	}
	// One line is held by the stuck Write, 8 wait in the queue.
	if got := w.Dropped(); got < lines-9 || got > lines-8 {
		t.Fatalf("dropped %d of %d lines with a queue of 8", got, lines)
	}
	close(out.release)
	w.Close(5 * time.Second)
	got := out.String()
	if !strings.HasPrefix(got, "line 0\n") || !strings.Contains(got, "log lines dropped") {
		t.Fatalf("stderr got:\n%s", got)
	}
}

func TestLogWriterKeepsOrderAndFlushesOnClose(t *testing.T) {
	var out bytes.Buffer
	w := newLogWriter(&out, 1024)
	var want strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(w, "line %d\n", i)
		fmt.Fprintf(&want, "line %d\n", i)
	}
	w.Close(5 * time.Second)
	if out.String() != want.String() {
		t.Fatalf("lines lost or reordered:\n%s", out.String())
	}
	if w.Dropped() != 0 {
		t.Fatalf("dropped %d lines with room for all", w.Dropped())
	}
	fmt.Fprintln(w, "after close") // must not panic
}

func TestLogWriterCloseIsBounded(t *testing.T) {
	out := &stuckWriter{release: make(chan struct{})}
	defer close(out.release)
	w := newLogWriter(out, 8)
	fmt.Fprintln(w, "never written")
	began := time.Now()
	w.Close(50 * time.Millisecond)
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("Close waited %v for a stuck stderr", d)
	}
}
