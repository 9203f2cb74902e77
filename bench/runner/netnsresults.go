package main

// NetnsRow is what the netns scenario measured on one server, beside the
// row's common figures (taken from its first step, the reference load).
type NetnsRow struct {
	// Offload is turnd's relay.offload ("" for coturn).
	Offload string `json:"offload,omitempty"`
	// Unavailable says why the server could not run here (turnd refusing
	// relay.offload: tc on a build or a kernel without it); the row has no
	// figures then, and it is not an error of the benchmark.
	Unavailable string `json:"unavailable,omitempty"`
	// Steps are the rate ramp; the first is the reference load, the same
	// for every server, and its CPU figures are the row's.
	Steps []NetnsStep `json:"steps,omitempty"`
	// LossFreeRate is the highest delivered rate (messages/s each way) of
	// a step with no loss, up to the first step with loss.
	LossFreeRate float64 `json:"loss_free_rate,omitempty"`
	// LossFreeOpen means no step lost anything: the server holds more
	// than the last step offered.
	LossFreeOpen bool `json:"loss_free_open,omitempty"`
	// ServerShareRatio is the server's share per packet over coturn's, at
	// the reference load.
	ServerShareRatio float64 `json:"server_share_ratio,omitempty"`
	// KernelRelayed is what turnd_kernel_relayed_packets_total grew by
	// during the reference load (both directions), and KernelShare that
	// over the packets relayed.
	KernelRelayed float64 `json:"kernel_relayed_packets,omitempty"`
	KernelShare   float64 `json:"kernel_share,omitempty"`
	// RelayedMetric is turnd_relayed_packets_total's growth over the same
	// load: the kernel's included, so it should match the packets uclient counted.
	RelayedMetric float64 `json:"relayed_metric,omitempty"`
}

// NetnsStep is one load of the ramp: Processes uclient processes of
// Clients clients each, started together. Rates are messages per second
// each way over the window from the first process's start of sending to
// the last one's totals; CPU figures are seconds over that window
// (splitCPU) and µs per relayed packet (sent + received).
type NetnsStep struct {
	Processes    int      `json:"processes"`
	Clients      int      `json:"clients_each"`
	Sent         int64    `json:"sent"`
	Received     int64    `json:"received"`
	Lost         int64    `json:"lost"`
	WindowS      float64  `json:"window_s"`
	OfferedRate  float64  `json:"offered_rate"`
	Delivered    float64  `json:"delivered_rate"`
	CPU          cpuShare `json:"cpu_s"`
	MachineUS    float64  `json:"machine_us_per_pkt"`
	LoadGenUS    float64  `json:"load_gen_us_per_pkt"`
	OtherUS      float64  `json:"other_us_per_pkt"`
	ServerUS     float64  `json:"server_share_us_per_pkt"`
	ServerProcUS float64  `json:"server_process_us_per_pkt"`
	LossFree     bool     `json:"loss_free"`
	Error        string   `json:"error,omitempty"`
	// kernel and relayedMetric are what turnd's counters grew by over the
	// step (read for the reference load only).
	kernel, relayedMetric float64
}

// otherCPUs is how many CPUs other work used on average in the window.
func (s NetnsStep) otherCPUs() float64 {
	if s.WindowS <= 0 {
		return 0
	}
	return max(0, s.CPU.Other) / s.WindowS
}

// relayed is every datagram the server forwarded: each message crosses it
// twice, to the peer and back.
func (s NetnsStep) relayed() int64 { return s.Sent + s.Received }

// settle fills the step's derived figures from its counts and CPU.
func (s *NetnsStep) settle() {
	if s.WindowS > 0 {
		s.OfferedRate = float64(s.Sent) / s.WindowS
		s.Delivered = float64(s.Received) / s.WindowS
	}
	n := s.relayed()
	s.MachineUS = perPacketUS(s.CPU.Machine, n)
	s.LoadGenUS = perPacketUS(s.CPU.LoadGen, n)
	s.OtherUS = perPacketUS(s.CPU.Other, n)
	s.ServerUS = perPacketUS(s.CPU.Server, n)
	s.ServerProcUS = perPacketUS(s.CPU.ServerProc, n)
	s.LossFree = s.Error == "" && s.Sent > 0 && s.Lost == 0 && s.Received == s.Sent
}

// lossFreeMax is the ramp's result: the highest delivered rate among the
// steps that lost nothing before the first that lost something, and
// whether every step held (so the limit lies beyond the ramp).
func lossFreeMax(steps []NetnsStep) (rate float64, open bool) {
	for _, s := range steps {
		if !s.LossFree {
			return rate, false
		}
		rate = max(rate, s.Delivered)
	}
	return rate, len(steps) > 0
}
