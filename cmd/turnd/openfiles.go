package main

import (
	"fmt"
	"log/slog"
	"math"

	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/rlimit"
)

// raiseOpenFiles lifts the soft open-file limit to the hard one before any
// socket is bound. A refusal is not fatal: turnd serves with the limit it
// has, and reportCapacity says how far that goes.
func raiseOpenFiles(log *slog.Logger) uint64 {
	soft, hard, err := rlimit.RaiseOpenFiles()
	if err != nil {
		log.Warn("could not raise the open-file limit; serving with the current one",
			"soft", soft, "hard", hard, "err", err)
	}
	return soft
}

// reportCapacity logs how many allocations the open-file limit leaves room
// for, once every listener is open so its descriptors are counted. It warns
// when the limit, not the relay port range, is what caps allocations.
func reportCapacity(log *slog.Logger, soft uint64, relay config.Relay) {
	open, err := rlimit.OpenFiles()
	if err != nil {
		log.Warn("cannot count open files", "err", err)
	}
	room := udpAllocationRoom(soft, open)
	ports := relay.MaxPort - relay.MinPort + 1
	msg := fmt.Sprintf("open-file limit: room for about %d UDP allocations (a TCP client needs two descriptors, a TLS client three)", room)
	args := []any{"limit", soft, "in_use", open, "udp_allocations", room, "relay_ports", ports}
	if room < ports {
		log.Warn(msg+"; this, not the relay port range, caps allocations: raise LimitNOFILE or ulimit -n", args...)
		return
	}
	log.Info(msg, args...)
}

// udpAllocationRoom is how many more relay sockets fit under the soft
// limit: one descriptor per UDP allocation. "About", because HTTP scrapes
// and TCP clients take descriptors from the same pool.
func udpAllocationRoom(soft uint64, open int) int {
	if soft <= uint64(open) {
		return 0
	}
	return int(min(soft-uint64(open), math.MaxInt))
}
