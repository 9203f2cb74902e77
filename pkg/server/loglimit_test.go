package server

import (
	"strings"
	"testing"
	"time"
)

func TestClip(t *testing.T) {
	long := strings.Repeat("a", 63) + "é" + strings.Repeat("b", 1500)
	got := clip(long)
	if want := strings.Repeat("a", 63) + "…(truncated)"; got != want {
		t.Fatalf("clip = %q, want %q (cut before the two-byte é)", got, want)
	}
	if s := strings.Repeat("x", 64); clip(s) != s {
		t.Fatal("a 64-byte string was clipped")
	}
}

func TestLogLimit(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLogLimit(3, func() time.Time { return now })
	for i := range 3 {
		if ok, n := l.allow(); !ok || n != 0 {
			t.Fatalf("line %d: allow = %v, %d", i, ok, n)
		}
	}
	for range 5 {
		if ok, _ := l.allow(); ok {
			t.Fatal("a fourth line in one second was let through")
		}
	}
	now = now.Add(time.Second)
	if ok, n := l.allow(); !ok || n != 5 {
		t.Fatalf("next second: allow = %v, %d; want true, 5 held back", ok, n)
	}
	if ok, n := l.allow(); !ok || n != 0 {
		t.Fatalf("the summary was repeated: allow = %v, %d", ok, n)
	}
}
