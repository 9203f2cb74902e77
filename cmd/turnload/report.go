package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// report is what a run prints: as JSON (for bench/) or as text. Sections
// that do not apply to the mode are left out.
type report struct {
	Mode    string        `json:"mode"`
	Server  string        `json:"server"`
	Clients int           `json:"clients"`
	Setup   setupReport   `json:"setup"`
	Relay   *relayReport  `json:"relay,omitempty"`
	Alloc   *allocReport  `json:"alloc,omitempty"`
	Idle    *idleReport   `json:"idle,omitempty"`
	Stream  *streamReport `json:"stream,omitempty"`
	Self    cpuReport     `json:"self"`
	Process *serverReport `json:"server_process,omitempty"`
}

// setupReport covers making the allocations a run needs.
type setupReport struct {
	OK      int            `json:"ok"`
	Failed  int            `json:"failed"`
	Seconds float64        `json:"seconds"`
	Errors  map[string]int `json:"errors,omitempty"`
}

// relayReport is relay mode's measurement. Rates are messages per second
// each way; the measured window runs from the first send until every echo
// is back (or --grace after the last send).
type relayReport struct {
	Framing        string  `json:"framing"` // "channel" or "send-indication"
	Size           int     `json:"size"`
	OfferedRate    float64 `json:"offered_rate"`
	Duration       float64 `json:"duration_s"`
	Sent           uint64  `json:"sent"`
	SendFailed     uint64  `json:"send_failed"`
	Received       uint64  `json:"received"`
	EchoIn         uint64  `json:"echo_in,omitempty"` // 0 with an external --peer
	Other          uint64  `json:"other,omitempty"`
	Misrouted      uint64  `json:"misrouted,omitempty"`
	SentRate       float64 `json:"sent_rate"`
	DeliveredRate  float64 `json:"delivered_rate"`
	LossPct        float64 `json:"loss_pct"`
	WindowSeconds  float64 `json:"window_s"`
	RelayedPackets uint64  `json:"relayed_packets"` // datagrams the server forwarded, both directions
	RTTAvgMs       float64 `json:"rtt_avg_ms"`
	RTTP50Ms       float64 `json:"rtt_p50_ms"`
	RTTP99Ms       float64 `json:"rtt_p99_ms"`
	RTTMaxMs       float64 `json:"rtt_max_ms"`
}

// allocReport is alloc mode's measurement.
type allocReport struct {
	Seconds        float64        `json:"seconds"`
	PerSecond      float64        `json:"per_second"`
	ReleaseFailed  int            `json:"release_failed"`
	ReleaseErrors  map[string]int `json:"release_errors,omitempty"`
	LatencyP50Ms   float64        `json:"latency_p50_ms"`
	LatencyP99Ms   float64        `json:"latency_p99_ms"`
	LatencyMaxMs   float64        `json:"latency_max_ms"`
	ServerCPUPerUS float64        `json:"server_cpu_per_alloc_us,omitempty"`
}

// idleReport is idle mode's measurement.
type idleReport struct {
	Held           int     `json:"held"`
	HoldSeconds    float64 `json:"hold_s"`
	Refreshes      int     `json:"refreshes"`
	RefreshFailed  int     `json:"refresh_failed"`
	BaselineRSSKB  int64   `json:"baseline_rss_kb,omitempty"`
	SetupRSSKB     int64   `json:"setup_rss_kb,omitempty"`
	HeldRSSKB      int64   `json:"held_rss_kb,omitempty"`
	RSSPerAllocKB  float64 `json:"rss_per_alloc_kb,omitempty"`
	ReleasedFailed int     `json:"release_failed"`
}

// streamReport is stream mode's measurement of its one stream.
type streamReport struct {
	Rate       float64 `json:"rate"`
	Size       int     `json:"size"`
	Seconds    float64 `json:"seconds"`
	Sent       uint64  `json:"sent"`
	SendFailed uint64  `json:"send_failed"`
	Received   uint64  `json:"received"` // distinct messages echoed back
	Duplicates uint64  `json:"duplicates,omitempty"`
	LossPct    float64 `json:"loss_pct"`
	// MaxGapMs is the longest silence between two consecutive echoes;
	// MaxGapFromUnixNano is when it began (the echo before it arrived).
	MaxGapMs           float64 `json:"max_gap_ms"`
	MaxGapFromUnixNano int64   `json:"max_gap_from_unix_ns,omitempty"`
	RTTP50Ms           float64 `json:"rtt_p50_ms"`
	RTTMaxMs           float64 `json:"rtt_max_ms"`
}

// cpuReport is turnload's own CPU over the measured window (its echo peer
// included), so a reader can tell whether the generator was the bottleneck.
type cpuReport struct {
	CPUSeconds     float64 `json:"cpu_s"`
	CPUPerPacketUS float64 `json:"cpu_per_packet_us,omitempty"`
}

// serverReport is the server process (--server-pid) over the same window.
type serverReport struct {
	PID            int     `json:"pid"`
	CPUSeconds     float64 `json:"cpu_s"`
	CPUPerPacketUS float64 `json:"cpu_per_packet_us,omitempty"`
	RSSKB          int64   `json:"rss_kb"`
	HWMKB          int64   `json:"hwm_kb"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// perPacketUS divides CPU time by a packet count, in microseconds.
func perPacketUS(cpu time.Duration, packets uint64) float64 {
	if packets == 0 {
		return 0
	}
	return float64(cpu) / float64(time.Microsecond) / float64(packets)
}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeText prints the figures a person looks at first.
func (r *report) writeText(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("turnload %s against %s: %d clients, setup %d ok / %d failed in %.2fs", r.Mode, r.Server, r.Clients,
		r.Setup.OK, r.Setup.Failed, r.Setup.Seconds)
	for k, v := range r.Setup.Errors {
		p("  setup error %q x%d", k, v)
	}
	if x := r.Relay; x != nil {
		p("relay (%s, %d B): offered %.0f/s, sent %d (%.0f/s), received %d (%.0f/s), loss %.3f%%",
			x.Framing, x.Size, x.OfferedRate, x.Sent, x.SentRate, x.Received, x.DeliveredRate, x.LossPct)
		p("  rtt avg %.3f ms, p50 %.3f ms, p99 %.3f ms, max %.3f ms; window %.2fs; %d packets relayed",
			x.RTTAvgMs, x.RTTP50Ms, x.RTTP99Ms, x.RTTMaxMs, x.WindowSeconds, x.RelayedPackets)
		if x.SendFailed+x.Other+x.Misrouted > 0 {
			p("  send failed %d, other %d, misrouted %d", x.SendFailed, x.Other, x.Misrouted)
		}
	}
	if x := r.Alloc; x != nil {
		p("alloc: %.0f allocations/s over %.2fs; latency p50 %.2f ms, p99 %.2f ms, max %.2f ms; release failed %d",
			x.PerSecond, x.Seconds, x.LatencyP50Ms, x.LatencyP99Ms, x.LatencyMaxMs, x.ReleaseFailed)
	}
	if x := r.Idle; x != nil {
		p("idle: held %d for %.1fs, %d refresh rounds (%d failures)", x.Held, x.HoldSeconds, x.Refreshes, x.RefreshFailed)
		if x.HeldRSSKB > 0 {
			p("  server RSS %d kB before, %d kB after setup, %d kB at the end: %.2f kB per allocation",
				x.BaselineRSSKB, x.SetupRSSKB, x.HeldRSSKB, x.RSSPerAllocKB)
		}
	}
	if x := r.Stream; x != nil {
		p("stream (%.0f/s, %d B): sent %d, received %d, loss %.3f%%; longest gap between echoes %.1f ms; rtt p50 %.3f ms, max %.1f ms",
			x.Rate, x.Size, x.Sent, x.Received, x.LossPct, x.MaxGapMs, x.RTTP50Ms, x.RTTMaxMs)
	}
	p("turnload CPU %.2fs (%.2f µs per relayed packet)", r.Self.CPUSeconds, r.Self.CPUPerPacketUS)
	if x := r.Process; x != nil {
		p("server pid %d: CPU %.2fs (%.2f µs per relayed packet), RSS %d kB, peak %d kB",
			x.PID, x.CPUSeconds, x.CPUPerPacketUS, x.RSSKB, x.HWMKB)
	}
}
