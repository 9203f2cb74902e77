package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// rowOf finds a scenario's row for a server.
func rowOf(rows []Row, scenario, server string) (Row, bool) {
	for _, r := range rows {
		if r.Scenario == scenario && r.Server == server {
			return r, true
		}
	}
	return Row{}, false
}

// column is one figure of the table: how to read it from a row and print it.
type column struct {
	head   string
	get    func(Row) float64
	format string
}

func columns() []column {
	return []column{
		{"offered msg/s", func(r Row) float64 { return r.OfferedRate }, "%.0f"},
		{"delivered msg/s", func(r Row) float64 { return r.DeliveredRate }, "%.0f"},
		{"loss %", func(r Row) float64 { return r.LossPct }, "%.3f"},
		{"server CPU s", func(r Row) float64 { return r.ServerCPUSeconds }, "%.2f"},
		{"CPU µs/pkt", func(r Row) float64 { return r.CPUPerPacketUS }, "%.2f"},
		{"peak RSS MB", func(r Row) float64 { return float64(r.PeakRSSKB) / 1024 }, "%.1f"},
		{"RTT avg ms", func(r Row) float64 { return r.RTTAvgMs }, "%.2f"},
		{"RTT max ms", func(r Row) float64 { return r.RTTMaxMs }, "%.1f"},
		{"key figure", keyFigure, "%.1f"},
	}
}

// keyFigure is each scenario's own headline: saturation rate, allocations
// per second, RSS per idle allocation, or turnload's CPU per packet.
func keyFigure(r Row) float64 {
	switch {
	case r.SaturationRate > 0:
		return r.SaturationRate
	case r.AllocPerSec > 0:
		return r.AllocPerSec
	case r.IdleAllocs > 0:
		return r.RSSPerAllocKB
	}
	return 0
}

// keyName names a scenario's key figure.
func keyName(scenario string) string {
	switch scenario {
	case "saturation":
		return "max msg/s at ≤ 1 % loss"
	case "alloc-burst":
		return "allocations/s"
	case "idle-rss":
		return "RSS kB per idle allocation"
	}
	return ""
}

// renderTable writes the table as Markdown: for each scenario a row per
// server and a row of ratios turnd/coturn.
func renderTable(w io.Writer, res *Results) {
	if !slices.ContainsFunc(res.Rows, func(r Row) bool { return r.Netns == nil && r.Scenario != "fleet" }) {
		return // a run of the netns or fleet scenario alone
	}
	cols := columns()
	heads := []string{"scenario", "server"}
	for _, c := range cols {
		heads = append(heads, c.head)
	}
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(heads, " | "), strings.Repeat("---|", len(heads)))
	var order []string
	for _, r := range res.Rows {
		if r.Netns != nil || r.Scenario == "fleet" {
			continue // their own tables (renderNetns, renderFleet)
		}
		if len(order) == 0 || order[len(order)-1] != r.Scenario {
			order = append(order, r.Scenario)
		}
	}
	for _, sc := range order {
		t, tok := rowOf(res.Rows, sc, "turnd")
		c, cok := rowOf(res.Rows, sc, "coturn")
		name := sc
		if k := keyName(sc); k != "" {
			name += " (key: " + k + ")"
		}
		for _, x := range []struct {
			r  Row
			ok bool
		}{{t, tok}, {c, cok}} {
			if !x.ok {
				continue
			}
			cells := []string{name, x.r.Server}
			for _, col := range cols {
				cells = append(cells, cell(col.format, col.get(x.r)))
			}
			if x.r.Error != "" {
				cells[1] += " (error: " + strings.ReplaceAll(x.r.Error, "|", "/") + ")"
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
			name = ""
		}
		if tok && cok {
			cells := []string{"", "**turnd/coturn**"}
			for _, col := range cols {
				cells = append(cells, ratioCell(col.get(t), col.get(c)))
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
	}
}

func cell(format string, v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func ratioCell(t, c float64) string {
	if c == 0 || t == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", t/c)
}

// targets checks the goals of turnd's performance issue.
func targets(rows []Row) []Target {
	var out []Target
	add := func(goal, scenario, want string, get func(Row) float64, met func(ratio float64, t Row) bool) {
		t, tok := rowOf(rows, scenario, "turnd")
		c, cok := rowOf(rows, scenario, "coturn")
		tg := Target{Goal: goal, Want: want}
		if !tok || !cok || get(c) == 0 || get(t) == 0 {
			tg.Note = "not measured"
			out = append(out, tg)
			return
		}
		tg.Turnd, tg.Coturn = get(t), get(c)
		tg.Ratio = tg.Turnd / tg.Coturn
		tg.Met = met(tg.Ratio, t)
		if t.LossPct > 0 && scenario != "saturation" {
			tg.Note = fmt.Sprintf("turnd lost %.3f %%", t.LossPct)
		}
		out = append(out, tg)
	}
	cpu := func(r Row) float64 { return r.CPUPerPacketUS }
	add("CPU per relayed packet at 40 k msg/s each way, 0 % loss (turnload)", "relay-40k", "≤ 0.70× and 0 % loss", cpu,
		func(x float64, t Row) bool { return x <= 0.7 && t.LossPct == 0 })
	add("same, cross-check with uclient -m 200 -n 1000 -z 2", "udp-channels", "≤ 0.70× and 0 % loss", cpu,
		func(x float64, t Row) bool { return x <= 0.7 && t.LossPct == 0 })
	add("saturation throughput (≤ 1 % loss)", "saturation", "≥ 1.30×", func(r Row) float64 { return r.SaturationRate },
		func(x float64, _ Row) bool { return x >= 1.3 })
	add("TCP control: CPU per relayed packet", "tcp-channels", "≤ 0.80×", cpu,
		func(x float64, _ Row) bool { return x <= 0.8 })
	add("allocation rate", "alloc-burst", "≥ 1.00×", func(r Row) float64 { return r.AllocPerSec },
		func(x float64, _ Row) bool { return x >= 1 })
	add("RSS per idle allocation", "idle-rss", "≤ 1.00×", func(r Row) float64 { return r.RSSPerAllocKB },
		func(x float64, _ Row) bool { return x <= 1 })
	if _, ok := rowOf(rows, "netns", "coturn"); ok {
		out = append(out, netnsTargets(rows)...)
	}
	return out
}

func renderTargets(w io.Writer, ts []Target) {
	fmt.Fprintf(w, "| goal | turnd | coturn | turnd/coturn | target | met |\n|---|---|---|---|---|---|\n")
	for _, t := range ts {
		met := "**no**"
		if t.Met {
			met = "yes"
		}
		if t.Note == "not measured" {
			fmt.Fprintf(w, "| %s | – | – | – | %s | not measured |\n", t.Goal, t.Want)
			continue
		}
		if t.Note != "" {
			met += " (" + t.Note + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.2f× | %s | %s |\n", t.Goal, num(t.Turnd), num(t.Coturn), t.Ratio, t.Want, met)
	}
}

// num prints a figure with precision that suits its size.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// renderSteps lists the saturation ramp of both servers.
func renderSteps(w io.Writer, rows []Row) {
	fmt.Fprintf(w, "| server | offered msg/s | sent msg/s | delivered msg/s | loss %% | server µs/pkt | turnload µs/pkt | RTT avg ms | RTT max ms | held |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range []string{"turnd", "coturn"} {
		r, ok := rowOf(rows, "saturation", name)
		if !ok {
			continue
		}
		for _, s := range r.Steps {
			held := "yes"
			if !s.OK {
				held = "no"
			}
			fmt.Fprintf(w, "| %s | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %.1f | %s |\n", name, s.OfferedRate, s.SentRate,
				s.DeliveredRate, s.LossPct, s.CPUPerPacketUS, s.ClientPerPacketUS, s.RTTAvgMs, s.RTTMaxMs, held)
		}
	}
}
