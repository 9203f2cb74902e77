package loglimit_test

import (
	"strconv"
	"testing"

	"github.com/turnd/turnd/internal/loglimit"
)

// TestKindsAreIndependent: a flood of one kind does not hold back another.
func TestKindsAreIndependent(t *testing.T) {
	c := newClock()
	k := loglimit.NewKinds(2, c.now)
	for range 100 {
		k.Of("flood %s").Allow()
	}
	if _, ok := k.Of("other %s").Allow(); !ok {
		t.Fatal("a flood of one kind held back the first line of another")
	}
	if k.Of("flood %s") != k.Of("flood %s") {
		t.Fatal("one kind got two limiters")
	}
}

// TestKindsAreBounded: kinds past MaxKinds share one limiter.
func TestKindsAreBounded(t *testing.T) {
	k := loglimit.NewKinds(1, newClock().now)
	seen := map[*loglimit.Limiter]bool{}
	for i := range loglimit.MaxKinds + 50 {
		seen[k.Of(strconv.Itoa(i))] = true
	}
	if len(seen) != loglimit.MaxKinds+1 {
		t.Fatalf("%d limiters for %d kinds, want %d", len(seen), loglimit.MaxKinds+50, loglimit.MaxKinds+1)
	}
}

// TestKindsKnownKindAllocatesNothing: finding a known kind costs nothing.
func TestKindsKnownKindAllocatesNothing(t *testing.T) {
	k := loglimit.NewKinds(1, newClock().now)
	k.Of("known %s").Allow()
	if a := testing.AllocsPerRun(1000, func() { k.Of("known %s").Allow() }); a != 0 {
		t.Fatalf("a known kind's line held back with %v allocations", a)
	}
}
