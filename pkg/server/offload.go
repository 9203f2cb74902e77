package server

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

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
	// Gaps are the parts of the config the kernel path cannot serve
	// although it runs: a wildcard address keeps its clients in user space.
	Gaps []string
}

// kernelPath is the kernel fast path of a server, and how it started.
type kernelPath struct {
	path  *offload.Path // nil: user space only; set by New, never changed after (Close is idempotent)
	state Offload
	fails *loglimit.Limiter // entries or counts the kernel refused
	// passed is the last of Path.Passed's counts read, which a scrape
	// after the path closed still shows (no reset at shutdown).
	passed atomic.Pointer[map[string]uint64]
}

// openKernel starts the kernel path relay.offload asks for: tc must start
// or New fails with why; auto falls back to user space, saying why once.
func (s *Server) openKernel(cfg config.Config) error {
	r := cfg.Relay
	s.kernel = kernelPath{state: Offload{Mode: "off"}, fails: loglimit.New(1, nil)}
	if r.Offload == "off" || r.Offload == "" {
		return nil
	}
	p, err := offload.Open(offload.Options{Interfaces: r.OffloadInterfaces, MaxSlots: kernelSlots(r)})
	if err != nil {
		if r.Offload == "tc" {
			return fmt.Errorf("relay.offload tc: %w", err)
		}
		s.kernel.state.Reason = err.Error()
		s.log.Warn("relay.offload auto: relaying in user space", "reason", err)
		return nil
	}
	s.kernel.path = p
	s.kernel.state = Offload{Mode: "tc", Interfaces: p.Interfaces(), Gaps: offloadGaps(cfg)}
	s.log.Info("relay.offload: the kernel relays UDP channel data", "interfaces", p.Interfaces())
	for _, g := range s.kernel.state.Gaps {
		s.log.Warn(g)
	}
	return nil
}

// kernelSlots is how many relay sockets can have a counter slot: one per
// relay port and family, the most there can be. The per-CPU counters take
// 32 bytes a slot on every CPU, so they are not sized larger.
func kernelSlots(r config.Relay) int {
	return min(2*(r.MaxPort-r.MinPort+1), 65536)
}

// offloadGaps lists the addresses whose traffic the kernel path cannot
// take: it needs the IP a client sends to, and the one a relay socket
// sends from.
func offloadGaps(cfg config.Config) []string {
	var gaps []string
	for _, l := range cfg.Listen.UDP {
		if ap, err := netip.ParseAddrPort(l); err == nil && ap.Addr().IsUnspecified() {
			gaps = append(gaps, fmt.Sprintf("relay.offload: listen.udp %s is a wildcard: its clients are relayed in user space; listen on the IPs instead", l))
		}
	}
	if a, err := cfg.ResolveRelay(); err == nil {
		for _, b := range []netip.Addr{a.Bind4, a.Bind6} {
			if b.IsValid() && b.IsUnspecified() {
				gaps = append(gaps, fmt.Sprintf("relay.offload: relay.address %s is a wildcard: its allocations are relayed in user space", b))
			}
		}
	}
	return gaps
}

// kernelFailed logs a refusal of the kernel path, at most a line a second:
// the traffic concerned goes on in user space.
func (s *Server) kernelFailed(err error) {
	if held, ok := s.kernel.fails.Allow(); ok {
		s.log.Warn("kernel path failed: the traffic concerned stays in user space", loglimit.Args(held, "err", err)...)
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
}

// KernelPassed counts what the kernel path left to user space, by reason;
// nil when it does not run.
func (s *Server) KernelPassed() map[string]uint64 {
	if s.kernel.path == nil {
		return nil
	}
	m, err := s.kernel.path.Passed()
	if err != nil {
		if last := s.kernel.passed.Load(); last != nil {
			return *last
		}
		return map[string]uint64{}
	}
	s.kernel.passed.Store(&m)
	return m
}

// Offload says how the kernel fast path runs.
func (s *Server) Offload() Offload { return s.kernel.state }
