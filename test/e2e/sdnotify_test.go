package e2e

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestSystemdNotify plays systemd for a Type=notify unit: READY=1 once the
// listeners are up, STOPPING=1 when a drain starts, STATUS= lines with the
// allocations left and the deadline while draining.
func TestSystemdNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 64)
	go func() { // ends when the socket closes
		buf := make([]byte, 4096)
		for {
			n, _, err := ln.ReadFromUnix(buf)
			if err != nil {
				close(got)
				return
			}
			got <- string(buf[:n])
		}
	}()
	next := func(want string) string {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case msg, ok := <-got:
				if !ok {
					t.Fatalf("notify socket closed before %q", want)
				}
				if strings.Contains(msg, want) {
					return msg
				}
			case <-timeout:
				t.Fatalf("no %q notification", want)
			}
		}
	}

	srv, _ := launch(t, writeConfig(t, testConfig()), launchOptions{env: []string{"NOTIFY_SOCKET=" + sock}})
	next("READY=1")
	c := testturn.Dial(t, "tcp", srv.TCP, "demo", "demo")
	c.MustAllocate()
	srv.signal(syscall.SIGTERM)
	next("STOPPING=1")
	status := next("STATUS=")
	if !strings.Contains(status, "1 allocations left") || !strings.Contains(status, "deadline in") {
		t.Fatalf("STATUS line %q lacks the allocations left and the deadline", status)
	}
	c.Close() // the last allocation ends: the drain completes
	next("0 allocations left")
	if code := srv.waitExit(5 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
