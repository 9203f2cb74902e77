package loglimit_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/loglimit"
)

// clock is a settable clock safe for concurrent readers.
type clock struct{ ns atomic.Int64 }

func newClock() *clock               { c := &clock{}; c.ns.Store(time.Unix(1000, 0).UnixNano()); return c }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

func TestLimiter(t *testing.T) {
	c := newClock()
	l := loglimit.New(3, c.now)
	for i := range 3 {
		if n, ok := l.Allow(); !ok || n != 0 {
			t.Fatalf("line %d: Allow = %d, %v", i, n, ok)
		}
	}
	for range 5 {
		if _, ok := l.Allow(); ok {
			t.Fatal("a fourth line in one second was let through")
		}
	}
	c.add(999 * time.Millisecond)
	if _, ok := l.Allow(); ok {
		t.Fatal("a line was let through before the second ended")
	}
	if n := l.Held(); n != 6 {
		t.Fatalf("Held = %d, want 6", n)
	}
	c.add(time.Millisecond)
	if n, ok := l.Allow(); !ok || n != 6 {
		t.Fatalf("next second: Allow = %d, %v; want 6 held back, true", n, ok)
	}
	if n := l.Held(); n != 0 {
		t.Fatalf("Held = %d after a line reported them, want 0", n)
	}
	if n, ok := l.Allow(); !ok || n != 0 {
		t.Fatalf("the count was repeated: Allow = %d, %v", n, ok)
	}
}

// TestLimiterConcurrent: lines offered from many goroutines at once pass at
// most perSecond in a second, and every one held back is reported once.
func TestLimiterConcurrent(t *testing.T) {
	const perSecond, goroutines, each = 10, 8, 5000
	c := newClock()
	l := loglimit.New(perSecond, c.now)
	var passed, reported atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				if n, ok := l.Allow(); ok {
					passed.Add(1)
					reported.Add(n)
				}
			}
		})
	}
	wg.Wait()
	if p := passed.Load(); p != perSecond {
		t.Fatalf("%d lines passed in one second, want %d", p, perSecond)
	}
	c.add(time.Second)
	n, ok := l.Allow()
	if !ok {
		t.Fatal("no line passed in the next second")
	}
	if held := reported.Load() + n; held != goroutines*each-perSecond {
		t.Fatalf("%d lines reported held back, want %d", held, goroutines*each-perSecond)
	}
}

// TestLimiterHeldBackAllocatesNothing: a line held back costs no allocation.
func TestLimiterHeldBackAllocatesNothing(t *testing.T) {
	c := newClock()
	l := loglimit.New(1, c.now)
	l.Allow()
	if a := testing.AllocsPerRun(1000, func() { l.Allow() }); a != 0 {
		t.Fatalf("Allow held back a line with %v allocations", a)
	}
}

func TestArgs(t *testing.T) {
	if got := loglimit.Args(0, "user", "u"); len(got) != 2 {
		t.Fatalf("Args(0) = %v, want no suppressed", got)
	}
	got := loglimit.Args(7, "user", "u")
	if len(got) != 4 || got[2] != "suppressed" || got[3] != int64(7) {
		t.Fatalf("Args(7) = %v", got)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("a", 63) + "é" + strings.Repeat("b", 1500)
	got := loglimit.Clip(long)
	if want := strings.Repeat("a", 63) + "…(truncated)"; got != want {
		t.Fatalf("Clip = %q, want %q (cut before the two-byte é)", got, want)
	}
	if s := strings.Repeat("x", 64); loglimit.Clip(s) != s {
		t.Fatal("a 64-byte string was clipped")
	}
}
