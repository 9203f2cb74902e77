// Package stacks lets tests wait for a goroutine to reach a function, for
// states that no event announces: a goroutine parked where it should wait.
package stacks

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Wait waits, at most timeout, until some goroutine's stack shows fn.
func Wait(t testing.TB, fn string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if strings.Contains(string(buf[:n]), fn) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine in %s after %v", fn, timeout)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition no event announces
	}
}
