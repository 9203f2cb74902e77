package main

import (
	"fmt"
	"io"
	"strings"
)

// renderFleet lists the fleet scenario's two turnd rows and the ratio of
// fleet on to fleet off.
func renderFleet(w io.Writer, rows []Row) {
	fmt.Fprintf(w, "| fleet | relay-40k CPU µs/pkt (runs) | loss %% | RTT avg ms | allocations/s, 100 at once (bursts) | Allocate p50 / p99 ms, 100 at once | Allocate p50 / p99 / max ms, one at a time | turnd CPU µs/alloc | Redis CPU µs/alloc | Redis scripts/alloc | peak RSS MB |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range []string{serverNoFleet, serverFleet} {
		r, ok := rowOf(rows, "fleet", name)
		if !ok {
			continue
		}
		label := "off"
		if name == serverFleet {
			label = "on"
		}
		f := r.Fleet
		if f == nil {
			fmt.Fprintf(w, "| %s | error: %s |||||||||\n", label, strings.ReplaceAll(r.Error, "|", "/"))
			continue
		}
		redisCPU, scripts := "–", "–"
		if f.BurstAllocations > 0 && f.Fleet {
			redisCPU = fmt.Sprintf("%.1f", f.BurstRedisCPUSec*1e6/float64(f.BurstAllocations))
			scripts = fmt.Sprintf("%.2f", float64(f.BurstRedisScript)/float64(f.BurstAllocations))
		}
		turndCPU := "–"
		if f.BurstAllocations > 0 {
			turndCPU = fmt.Sprintf("%.1f", f.BurstServerCPUSec*1e6/float64(f.BurstAllocations))
		}
		if r.Error != "" {
			label += " (error: " + strings.ReplaceAll(r.Error, "|", "/") + ")"
		}
		fmt.Fprintf(w, "| %s | %.2f (%s) | %.3f | %.2f | %.0f (%s) | %.2f / %.2f | %.2f / %.2f / %.2f | %s | %s | %s | %.1f |\n",
			label, r.CPUPerPacketUS, joinNums(f.RelaySamplesUS, "%.2f"), r.LossPct, r.RTTAvgMs,
			r.AllocPerSec, joinNums(f.AllocSamples, "%.0f"), f.BurstP50Ms, f.BurstP99Ms,
			f.SerialP50Ms, f.SerialP99Ms, f.SerialMaxMs, turndCPU, redisCPU, scripts, float64(r.PeakRSSKB)/1024)
	}
	cpu := fleetOverhead(rows, func(r Row) float64 { return r.CPUPerPacketUS })
	rate := fleetOverhead(rows, func(r Row) float64 { return r.AllocPerSec })
	p50 := fleetOverhead(rows, func(r Row) float64 { return fleetSerialP50(r) })
	if cpu > 0 || rate > 0 {
		fmt.Fprintf(w, "| **on/off** | %s | | | %s | | %s (p50) | | | | |\n", timesCell(cpu), timesCell(rate), timesCell(p50))
	}
}

func fleetSerialP50(r Row) float64 {
	if r.Fleet == nil {
		return 0
	}
	return r.Fleet.SerialP50Ms
}

func timesCell(x float64) string {
	if x == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", x)
}

func joinNums(xs []float64, format string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(s, ", ")
}
