package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
)

// loadReport is the part of turnload's --json report the runner reads
// (cmd/turnload/report.go).
type loadReport struct {
	Setup struct {
		OK     int            `json:"ok"`
		Failed int            `json:"failed"`
		Errors map[string]int `json:"errors"`
	} `json:"setup"`
	Relay *struct {
		OfferedRate    float64 `json:"offered_rate"`
		Sent           uint64  `json:"sent"`
		Received       uint64  `json:"received"`
		SentRate       float64 `json:"sent_rate"`
		DeliveredRate  float64 `json:"delivered_rate"`
		LossPct        float64 `json:"loss_pct"`
		RelayedPackets uint64  `json:"relayed_packets"`
		RTTAvgMs       float64 `json:"rtt_avg_ms"`
		RTTMaxMs       float64 `json:"rtt_max_ms"`
	} `json:"relay"`
	Alloc *struct {
		PerSecond      float64 `json:"per_second"`
		ServerCPUPerUS float64 `json:"server_cpu_per_alloc_us"`
		ReleaseFailed  int     `json:"release_failed"`
		LatencyP50Ms   float64 `json:"latency_p50_ms"`
		LatencyP99Ms   float64 `json:"latency_p99_ms"`
		LatencyMaxMs   float64 `json:"latency_max_ms"`
	} `json:"alloc"`
	Idle *struct {
		Held          int     `json:"held"`
		RSSPerAllocKB float64 `json:"rss_per_alloc_kb"`
	} `json:"idle"`
	Self struct {
		CPUSeconds     float64 `json:"cpu_s"`
		CPUPerPacketUS float64 `json:"cpu_per_packet_us"`
	} `json:"self"`
	Process *struct {
		CPUSeconds     float64 `json:"cpu_s"`
		CPUPerPacketUS float64 `json:"cpu_per_packet_us"`
	} `json:"server_process"`
}

// turnloadTimeout bounds one turnload run beyond its own --duration:
// setup, grace and release of thousands of allocations.
const turnloadTimeout = 90 * time.Second

// runTurnload runs turnload against s with --json and --server-pid.
func runTurnload(ctx context.Context, e *env, s *server, duration time.Duration, args ...string) (*loadReport, error) {
	argv := append([]string{e.turnload}, args...)
	argv = append(argv, "--server", s.addr(), "--server-pid", strconv.Itoa(s.pid()), "--json")
	var out bytes.Buffer
	_, err := runTool(ctx, duration+turnloadTimeout, e.toolErr, func(r io.Reader) { _, _ = out.ReadFrom(r) }, argv...)
	var rep loadReport
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("decode turnload report: %w", jerr)
	}
	if rep.Process == nil {
		return &rep, fmt.Errorf("turnload could not sample the server: %w", errParse)
	}
	return &rep, err
}
