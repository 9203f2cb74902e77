package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTargets(t *testing.T) {
	rows := []Row{
		{Scenario: "relay-40k", Server: "turnd", CPUPerPacketUS: 3.5},
		{Scenario: "relay-40k", Server: "coturn", CPUPerPacketUS: 5},
		{Scenario: "tcp-channels", Server: "turnd", CPUPerPacketUS: 9, LossPct: 0.5},
		{Scenario: "tcp-channels", Server: "coturn", CPUPerPacketUS: 10},
		{Scenario: "saturation", Server: "turnd", SaturationRate: 50000},
		{Scenario: "saturation", Server: "coturn", SaturationRate: 40000},
		{Scenario: "alloc-burst", Server: "turnd", AllocPerSec: 5000},
		{Scenario: "alloc-burst", Server: "coturn", AllocPerSec: 5000},
	}
	got := map[string]Target{}
	for _, tg := range targets(rows) {
		got[tg.Goal] = tg
	}
	tests := []struct {
		prefix string
		met    bool
		note   string
	}{
		{"CPU per relayed packet at 40 k", true, ""},
		{"same, cross-check", false, "not measured"},
		{"saturation", false, ""}, // 1.25x < 1.3x
		{"TCP control", false, "turnd lost 0.500 %"},
		{"allocation rate", true, ""},
		{"RSS per idle", false, "not measured"},
	}
	for _, tt := range tests {
		var tg *Target
		for goal, v := range got {
			if strings.HasPrefix(goal, tt.prefix) {
				tg = &v
			}
		}
		if tg == nil {
			t.Errorf("no target %q", tt.prefix)
			continue
		}
		if tg.Met != tt.met || tg.Note != tt.note {
			t.Errorf("%s: met %v note %q, want %v %q", tt.prefix, tg.Met, tg.Note, tt.met, tt.note)
		}
	}
}

func TestRenderTable(t *testing.T) {
	res := &Results{Rows: []Row{
		{Scenario: "relay-40k", Server: "turnd", OfferedRate: 40000, CPUPerPacketUS: 4},
		{Scenario: "relay-40k", Server: "coturn", OfferedRate: 40000, CPUPerPacketUS: 5, Error: "a|b"},
	}}
	var b bytes.Buffer
	renderTable(&b, res)
	out := b.String()
	for _, want := range []string{"| relay-40k | turnd | 40000 |", "**turnd/coturn** | 1.00× |", "| 0.80× |", "error: a/b"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestMerge(t *testing.T) {
	old := &Results{Seconds: 100, Rows: []Row{
		{Scenario: "a", Server: "turnd"}, {Scenario: "a", Server: "coturn"},
		{Scenario: "b", Server: "turnd", LossPct: 9, Error: "boom"}, {Scenario: "b", Server: "coturn", LossPct: 9},
		{Scenario: "c", Server: "turnd"},
	}}
	fresh := &Results{Seconds: 10, Started: time.Unix(0, 0).UTC(), Rows: []Row{
		{Scenario: "b", Server: "turnd"}, {Scenario: "b", Server: "coturn"}, {Scenario: "d", Server: "turnd"},
	}}
	m := merge(old, fresh)
	var order []string
	for _, r := range m.Rows {
		order = append(order, r.Scenario+"/"+r.Server)
		want := map[string]int{"turnd": 2, "coturn": 1}[r.Server] // turnd's replaced row had failed
		if r.Scenario == "b" && (r.LossPct != 0 || len(r.Notes) != want) {
			t.Errorf("row %+v not replaced or not noted", r)
		}
	}
	if got := strings.Join(order, " "); got != "a/turnd a/coturn b/turnd b/coturn c/turnd d/turnd" {
		t.Errorf("order %s", got)
	}
	if m.Seconds != 110 {
		t.Errorf("seconds %v", m.Seconds)
	}
}

func TestBusyCPUs(t *testing.T) {
	a, b := cpuTimes{busy: 100, total: 1000}, cpuTimes{busy: 150, total: 1200}
	if got := busyCPUs(a, b, 2); got != 0.5 {
		t.Errorf("busy %v, want 0.5", got)
	}
	if got := busyCPUs(b, a, 2); got != 0 {
		t.Errorf("backwards: %v", got)
	}
	if _, err := readCPUTimes(); err != nil {
		t.Fatal(err)
	}
}
