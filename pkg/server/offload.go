package server

import (
	"errors"
	"fmt"

	"github.com/turnd/turnd/internal/loglimit"
	"github.com/turnd/turnd/internal/offload"
	"github.com/turnd/turnd/pkg/config"
)

// Offload is how the kernel fast path (relay.offload) runs: Mode "tc" on
// Interfaces, or "off" (Reason says why, when auto asked for it).
type Offload struct {
	Mode       string
	Interfaces []string
	Reason     string
}

// kernelPath is the kernel fast path of a server, and how it started.
type kernelPath struct {
	path  *offload.Path // nil: user space only
	state Offload
	fails *loglimit.Limiter // entries or counts the kernel refused
}

// openKernel starts the kernel path relay.offload asks for: tc must start
// or New fails with why; auto falls back to user space, saying why once.
func (s *Server) openKernel(r config.Relay) error {
	s.kernel = kernelPath{state: Offload{Mode: "off"}, fails: loglimit.New(1, nil)}
	if r.Offload == "off" || r.Offload == "" {
		return nil
	}
	p, err := offload.Open(offload.Options{Interfaces: r.OffloadInterfaces})
	if err != nil {
		if r.Offload == "tc" {
			return fmt.Errorf("relay.offload tc: %w", err)
		}
		s.kernel.state.Reason = err.Error()
		s.log.Warn("relay.offload auto: relaying in user space", "reason", err)
		return nil
	}
	s.kernel.path = p
	s.kernel.state = Offload{Mode: "tc", Interfaces: p.Interfaces()}
	s.log.Info("relay.offload: the kernel relays UDP channel data", "interfaces", p.Interfaces())
	return nil
}

// kernelFailed logs a refusal of the kernel path, at most a line a second:
// the traffic concerned goes on in user space.
func (s *Server) kernelFailed(err error) {
	if held, ok := s.kernel.fails.Allow(); ok {
		s.log.Warn("kernel path refused an entry: that traffic stays in user space", loglimit.Args(held, "err", err)...)
	}
}

// closeKernel detaches the kernel path, after the relay has taken its
// entries out.
func (s *Server) closeKernel() {
	if s.kernel.path == nil {
		return
	}
	if err := s.kernel.path.Close(); err != nil && !errors.Is(err, offload.ErrClosed) {
		s.log.Warn("detaching the kernel path", "err", err)
	}
	s.kernel.path = nil
}

// Offload says how the kernel fast path runs.
func (s *Server) Offload() Offload { return s.kernel.state }
