package server_test

import (
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/server"
)

// TestServeLoopFailureReported: a UDP socket or TCP listener that dies under
// pion is reported on Failed, so the process can stop instead of running deaf.
func TestServeLoopFailureReported(t *testing.T) {
	for _, tt := range []struct {
		name   string
		break_ func(*server.Server) error
		want   string
	}{
		{"udp read loop", (*server.Server).BreakUDPSocket, "read udp 127.0.0.1:"},
		{"tcp accept loop", (*server.Server).BreakTCPListener, "accept 127.0.0.1:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, testOptions())
			if err := tt.break_(s); err != nil {
				t.Fatalf("break: %v", err)
			}
			select {
			case err := <-s.Failed():
				if !strings.Contains(err.Error(), tt.want) || !errors.Is(err, net.ErrClosed) {
					t.Errorf("Failed: %v, want an error naming %q and wrapping net.ErrClosed", err, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Failed reported nothing 5s after the socket died")
			}
		})
	}
}

// TestCloseIsNotAFailure: the read and accept errors Close causes are not
// reported as a failure.
func TestCloseIsNotAFailure(t *testing.T) {
	base := runtime.NumGoroutine()
	s := start(t, testOptions())
	c := dial(t, s, "udp")
	c.MustAllocate()
	c.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	// pion's loops have returned, with the errors Close caused, once their
	// goroutines are gone.
	waitGoroutines(t, base)
	select {
	case err := <-s.Failed():
		t.Fatalf("Failed after Close: %v", err)
	default:
	}
}
