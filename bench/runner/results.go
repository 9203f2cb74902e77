package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Results is everything one benchmark run produced: bench/results/latest.json.
type Results struct {
	Machine Machine   `json:"machine"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	MaxBPS  int64     `json:"max_bps,omitempty"` // -max-bps, given to both servers
	Rows    []Row     `json:"rows"`
	Targets []Target  `json:"targets"`
}

// Machine describes where the numbers come from.
type Machine struct {
	CPUs         int    `json:"cpus"`
	CPUModel     string `json:"cpu_model"`
	Kernel       string `json:"kernel"`
	MemTotalKB   int64  `json:"mem_total_kb"`
	GoVersion    string `json:"go_version"`
	TurndVersion string `json:"turnd_version"`
	CoturnVer    string `json:"coturn_version"`
}

// Row is one scenario on one server. Rates are messages per second each
// way; a relayed packet is one datagram forwarded by the server, so a
// message echoed through it counts twice.
type Row struct {
	Scenario         string    `json:"scenario"`
	Server           string    `json:"server"`
	Command          string    `json:"command"`
	OfferedRate      float64   `json:"offered_rate,omitempty"`
	DeliveredRate    float64   `json:"delivered_rate,omitempty"`
	LossPct          float64   `json:"loss_pct"`
	ServerCPUSeconds float64   `json:"server_cpu_s"`
	RelayedPackets   int64     `json:"relayed_packets,omitempty"`
	CPUPerPacketUS   float64   `json:"cpu_per_packet_us,omitempty"`
	PeakRSSKB        int64     `json:"peak_rss_kb"`
	RTTAvgMs         float64   `json:"rtt_avg_ms,omitempty"`
	RTTMaxMs         float64   `json:"rtt_max_ms,omitempty"`
	ClientCPUSeconds float64   `json:"client_cpu_s"`
	AllocPerSec      float64   `json:"alloc_per_s,omitempty"`
	CPUPerAllocUS    float64   `json:"cpu_per_alloc_us,omitempty"`
	FailedAllocs     int       `json:"failed_allocs,omitempty"`
	IdleAllocs       int       `json:"idle_allocs,omitempty"`
	RSSPerAllocKB    float64   `json:"rss_per_alloc_kb,omitempty"`
	SaturationRate   float64   `json:"saturation_rate,omitempty"`
	Samples          []float64 `json:"samples,omitempty"` // repeated runs' key figure (CPU µs/pkt, allocations/s); the row is the median
	Steps            []Step    `json:"steps,omitempty"`
	Seconds          float64   `json:"seconds"`          // wall time of the scenario on this server
	IRQCPUSeconds    float64   `json:"irq_cpu_s"`        // interrupt time during the row (charged to no process)
	BusyBeforeCPUs   float64   `json:"busy_before_cpus"` // other work on the machine just before the server started
	OtherCPUSeconds  float64   `json:"other_cpu_s"`      // CPU of other user processes during the row (see otherCPU)
	Notes            []string  `json:"notes,omitempty"`
	Error            string    `json:"error,omitempty"`

	// Handovers are the hand-over scenario's upgrades, one per allocation count.
	Handovers []Handover `json:"handovers,omitempty"`

	// Netns is the netns scenario's own figures (its servers are coturn,
	// turnd-user, turnd-kernel and turnd-kernel-limited).
	Netns *NetnsRow `json:"netns,omitempty"`

	// Fleet is the fleet scenario's own figures (its servers are turnd
	// and turnd-fleet).
	Fleet *FleetRow `json:"fleet,omitempty"`
}

// Step is one offered rate of the saturation ramp.
type Step struct {
	OfferedRate       float64 `json:"offered_rate"`
	SentRate          float64 `json:"sent_rate"`
	DeliveredRate     float64 `json:"delivered_rate"`
	LossPct           float64 `json:"loss_pct"`
	ServerCPUSeconds  float64 `json:"server_cpu_s"`
	CPUPerPacketUS    float64 `json:"cpu_per_packet_us"`
	ClientPerPacketUS float64 `json:"client_cpu_per_packet_us"`
	RTTAvgMs          float64 `json:"rtt_avg_ms"`
	RTTMaxMs          float64 `json:"rtt_max_ms"`
	Tries             int     `json:"tries"`
	OK                bool    `json:"ok"` // loss <= 1 % and the generator kept up
}

// Target is one goal from turnd's performance issue, checked against a row.
type Target struct {
	Goal   string  `json:"goal"`
	Turnd  float64 `json:"turnd"`
	Coturn float64 `json:"coturn"`
	Ratio  float64 `json:"ratio"`
	Want   string  `json:"want"`
	Met    bool    `json:"met"`
	Note   string  `json:"note,omitempty"`
}

func (r *Results) write(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

func readResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode results: %w", err)
	}
	return &r, nil
}

// otherCPUs is the average number of CPUs other programs used during the
// row.
func (r *Row) otherCPUs() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return max(0, r.OtherCPUSeconds) / r.Seconds
}
