package main

import (
	"fmt"
	"io"
	"strings"
)

// renderNetns prints the netns scenario: a row per server at the
// reference load, then every ramp step.
func renderNetns(w io.Writer, rows []Row) {
	fmt.Fprintf(w, "netns: client, turnd and peer namespaces joined by veths; CPU per relayed packet at the reference load, all CPUs (/proc/stat)\n\n")
	fmt.Fprintf(w, "| server | offered msg/s | delivered msg/s | lost | machine µs/pkt | load generator µs/pkt | other µs/pkt | server share µs/pkt | server share ×coturn | server process µs/pkt | kernel-relayed | loss-free max msg/s |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var netns []Row
	for _, r := range rows {
		if r.Netns != nil {
			netns = append(netns, r)
		}
	}
	for _, r := range netns {
		n := r.Netns
		name := r.Server
		if n.Offload != "" {
			name += " (relay.offload: " + n.Offload + ")"
		}
		switch {
		case n.Unavailable != "":
			fmt.Fprintf(w, "| %s | unavailable: %s |%s\n", name, escapeCell(n.Unavailable), strings.Repeat(" |", 10))
			continue
		case len(n.Steps) == 0:
			fmt.Fprintf(w, "| %s | error: %s |%s\n", name, escapeCell(r.Error), strings.Repeat(" |", 10))
			continue
		}
		s := n.Steps[0]
		kernel := "–"
		if n.Offload == "tc" {
			kernel = fmt.Sprintf("%.1f %%", n.KernelShare*100)
		}
		maxRate := cell("%.0f", n.LossFreeRate)
		if n.LossFreeOpen {
			maxRate = "≥ " + maxRate
		}
		ratioCol := "–"
		if n.ServerShareRatio > 0 {
			ratioCol = fmt.Sprintf("%.2f×", n.ServerShareRatio)
		}
		if r.Error != "" {
			name += " (error: " + escapeCell(r.Error) + ")"
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %d | %.2f | %.2f | %.2f | %.2f | %s | %.2f | %s | %s |\n", name, s.OfferedRate, s.Delivered, s.Lost,
			s.MachineUS, s.LoadGenUS, s.OtherUS, s.ServerUS, ratioCol, s.ServerProcUS, kernel, maxRate)
	}
	fmt.Fprintf(w, "\n| server | uclients × clients | sent | delivered msg/s | lost | machine µs/pkt | server share µs/pkt | held |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range netns {
		for _, s := range r.Netns.Steps {
			held := "yes"
			if !s.LossFree {
				held = "no"
				if s.Error != "" {
					held += " (" + escapeCell(s.Error) + ")"
				}
			}
			fmt.Fprintf(w, "| %s | %d × %d | %d | %.0f | %d | %.2f | %.2f | %s |\n", r.Server, s.Processes, s.Clients, s.Sent, s.Delivered, s.Lost,
				s.MachineUS, s.ServerUS, held)
		}
	}
}

// netnsTargets checks issue 25's goals against the netns rows.
func netnsTargets(rows []Row) []Target {
	c, cok := rowOf(rows, "netns", "coturn")
	u, uok := rowOf(rows, "netns", "turnd-user")
	k, kok := rowOf(rows, "netns", "turnd-kernel")
	share := Target{Goal: "kernel path: server's share of the machine's CPU per relayed packet (netns)", Want: "≤ 0.25×"}
	rate := Target{Goal: "kernel path: loss-free maximum rate (netns)", Want: "highest of the three"}
	if !cok || !kok || len(c.Netns.Steps) == 0 || len(k.Netns.Steps) == 0 {
		share.Note, rate.Note = "not measured", "not measured"
		return []Target{share, rate}
	}
	share.Turnd, share.Coturn = k.Netns.Steps[0].ServerUS, c.Netns.Steps[0].ServerUS
	share.Ratio = ratio(share.Turnd, share.Coturn)
	share.Met = share.Ratio > 0 && share.Ratio <= 0.25 && k.Netns.Steps[0].LossFree
	rate.Turnd, rate.Coturn = k.Netns.LossFreeRate, c.Netns.LossFreeRate
	rate.Ratio = ratio(rate.Turnd, rate.Coturn)
	rate.Met = rate.Turnd > 0 && rate.Turnd >= rate.Coturn && (!uok || rate.Turnd >= u.Netns.LossFreeRate)
	if k.Netns.LossFreeOpen {
		rate.Note = "no step lost a message: the limit lies beyond the ramp"
	}
	return []Target{share, rate}
}

// escapeCell keeps a message from splitting a Markdown table cell.
func escapeCell(s string) string { return strings.NewReplacer("|", "/", "\n", "; ").Replace(s) }
