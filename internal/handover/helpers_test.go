package handover

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"
)

// testCtx bounds every conversation so that a bug fails a test instead of
// hanging it.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pair returns both ends of a Pair as Conns in this process.
func pair(t *testing.T) (parent, child *Conn) {
	t.Helper()
	parent, f, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	child = adopt(t, f)
	_ = f.Close()
	t.Cleanup(func() { _ = parent.Close(); _ = child.Close() })
	return parent, child
}

// adopt makes a Conn of a duplicate of f, as a child process would of its
// inherited descriptor.
func adopt(t *testing.T, f *os.File) *Conn {
	t.Helper()
	c, err := fileConn(os.NewFile(uintptr(dupFd(t, f)), "test"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func countFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// checkGoroutines fails t if goroutines outlive the test body.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		// A goroutine that has sent its last result may still be on its
		// way out, and exiting is no event to wait on: look again, for a
		// bounded time.
		n := 0
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
			if n = runtime.NumGoroutine(); n <= before {
				return
			}
			runtime.Gosched()
			time.Sleep(time.Millisecond)
		}
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	})
}

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}
