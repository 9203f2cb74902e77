package main

import (
	"fmt"
	"io"
)

// handoverGapTarget is issue 24's bound on the stream's longest gap across
// an upgrade, by idle allocations held.
func handoverGapTarget(allocations int) float64 {
	if allocations <= 1000 {
		return 100
	}
	return 1000
}

// handoverMet reports whether an upgrade met the targets: the gap
// under its bound, nothing lost, nothing dropped at turnd's sockets (the
// machine-wide RcvbufErrors count other work too: shown, not judged).
func handoverMet(h Handover) bool {
	return h.Error == "" && h.MaxGapMs < handoverGapTarget(h.Allocations) && h.LossPct == 0 && h.SocketDrops == 0
}

// renderHandovers lists the hand-over scenario's upgrades.
func renderHandovers(w io.Writer, r Row) {
	fmt.Fprintf(w, "| idle allocations | stream msg/s | sent | received | loss %% | longest gap ms | gap began ms after upgrade start | turnd upgrade ms | frozen ms | old exited ms later | moved | drops at turnd's sockets | machine UDP RcvbufErrors Δ | machine UDP InErrors Δ | turnd open files limit | target | met |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, h := range r.Handovers {
		met := "**no**"
		if handoverMet(h) {
			met = "yes"
		}
		if h.Error != "" {
			met += " (error: " + h.Error + ")"
		}
		fmt.Fprintf(w, "| %d | %.0f | %d | %d | %.3f | %.1f | %.0f | %.0f | %.1f | %.0f | %d | %d | %d | %d | %d | gap < %.0f ms, 0 loss, 0 drops at turnd's sockets | %s |\n",
			h.Allocations, h.StreamRate, h.Sent, h.Received, h.LossPct, h.MaxGapMs, h.GapFromUpgradeMs, h.UpgradeMs,
			h.FrozenMs, h.OldExitedMs, h.Moved, h.SocketDrops, h.RcvbufErrors, h.InErrors, h.OpenFilesLimit, handoverGapTarget(h.Allocations), met)
	}
}
