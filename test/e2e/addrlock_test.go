package e2e

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestSecondInstanceRefused: with TCP off, nothing but turnd's address lock
// stops a second turnd from joining the first one's SO_REUSEPORT group on
// the same UDP address (the kernel would then split clients between them).
// The second exits non-zero saying why; the first, whose own group of two
// sockets joined, keeps serving.
func TestSecondInstanceRefused(t *testing.T) {
	probe, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.LocalAddr().String()
	_ = probe.Close()

	cfg := testConfig()
	cfg.Listen.UDP = []string{addr}
	cfg.Listen.TCP = nil
	cfg.Listen.UDPSockets = 2
	first := start(t, cfg)

	second := testConfig()
	second.Listen.UDP = []string{addr}
	second.Listen.TCP = nil
	code, out := runTurnd(t, "--config", writeConfig(t, second))
	if code == 0 || !strings.Contains(out, "another turnd already serves this address") || !strings.Contains(out, addr) {
		t.Fatalf("second instance: exit %d, want a refusal naming %s:\n%s", code, addr, out)
	}
	if strings.Contains(out, "turnd serving") {
		t.Errorf("the second instance announced itself:\n%s", out)
	}

	client := testturn.Dial(t, "udp", addr, "demo", "demo")
	client.MustAllocate()
	if first.exited() {
		t.Fatal("the first instance exited")
	}
	if code := client.Refresh(0); code != 0 {
		t.Fatalf("refresh 0: %d", code)
	}
	first.signal(syscall.SIGTERM)
	if code := first.waitExit(5 * time.Second); code != 0 {
		t.Fatalf("first instance exit code %d", code)
	}
}
