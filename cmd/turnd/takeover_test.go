package main

import (
	"os"
	"strconv"
	"testing"

	"github.com/turnd/turnd/pkg/config"
)

// TestSameAddr: the predecessor's HTTP listener is kept only for the
// address the config still names, however either is written.
func TestSameAddr(t *testing.T) {
	for _, tc := range []struct {
		bound, configured string
		want              bool
	}{
		{"127.0.0.1:9641", "127.0.0.1:9641", true},
		{"[::]:9641", "0.0.0.0:9641", true},
		{"[::ffff:127.0.0.1]:9641", "127.0.0.1:9641", true},
		{"127.0.0.1:9641", "127.0.0.1:9642", false},
		{"127.0.0.1:9641", "127.0.0.2:9641", false},
		{"127.0.0.1:9641", "localhost:9641", false},
	} {
		if got := sameAddr(tc.bound, tc.configured); got != tc.want {
			t.Errorf("sameAddr(%q, %q) = %v, want %v", tc.bound, tc.configured, got, tc.want)
		}
	}
}

// TestUpgradeTarget: --config's handover.socket first, else the PID's
// abstract socket; a PID that is not running is an error.
func TestUpgradeTarget(t *testing.T) {
	cfg := config.Default()
	cfg.Handover.Socket = "/run/turnd/handover.sock"
	if addr, _, err := upgradeTarget(0, "", &cfg); err != nil || addr != cfg.Handover.Socket {
		t.Fatalf("with handover.socket: %q, %v", addr, err)
	}
	self := os.Getpid()
	if addr, pid, err := upgradeTarget(self, "", &cfg); err != nil || addr != "@turnd/pid/"+strconv.Itoa(self) || pid != self {
		t.Fatalf("--pid %d: %q, %d, %v", self, addr, pid, err)
	}
	if _, _, err := upgradeTarget(0, "", nil); err == nil {
		t.Fatal("no flag at all: no error")
	}
	if _, _, err := upgradeTarget(1<<30, "", nil); err == nil {
		t.Fatal("a PID nobody runs: no error")
	}
}
