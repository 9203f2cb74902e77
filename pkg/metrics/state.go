package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/drain"
)

// stateCollector reads live state at scrape time.
type stateCollector struct {
	src Sources

	allocs, coturnAllocs, draining, accepting, deadline *prometheus.Desc
	relayed, relayedBytes, dropped, droppedBytes        *prometheus.Desc
	peerRefused                                         *prometheus.Desc
	kernel, kernelBytes, kernelChannels, kernelPassed   *prometheus.Desc
	coturnPeerRcvp, coturnPeerRcvb                      *prometheus.Desc
	coturnPeerSentp, coturnPeerSentb                    *prometheus.Desc
}

func newStateCollector(src Sources) *stateCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &stateCollector{
		src:          src,
		allocs:       d("turnd_allocations", "Live allocations, by client transport.", "transport"),
		coturnAllocs: d("turn_total_allocations", "Live allocations, by transport (coturn-compatible).", "type"),
		draining:     d("turnd_draining", "1 while the server drains (readiness fails), else 0."),
		accepting:    d("turnd_accepting_allocations", "1 while new allocations are accepted."),
		deadline:     d("turnd_drain_deadline_timestamp_seconds", "When the drain force-closes what is left (0 when not draining)."),
		relayed:      d("turnd_relayed_packets_total", "Packets relayed, by direction (to_peer, from_peer).", "direction"),
		relayedBytes: d("turnd_relayed_bytes_total", "Payload bytes relayed, by direction (to_peer, from_peer).", "direction"),
		dropped: d("turnd_relay_dropped_total",
			"Datagrams the relay did not pass on, by direction (to_peer, to_client) and reason (no_permission, rate_limited, too_long, client_busy, send_error, forbidden_peer).",
			"direction", "reason"),
		droppedBytes: d("turnd_relay_dropped_bytes_total",
			"Payload bytes of the datagrams in turnd_relay_dropped_total (but those a batched send to UDP clients lost), by direction and reason.",
			"direction", "reason"),
		peerRefused: d("turnd_peer_connections_refused_total",
			"Peer connections to RFC 6062 relay ports closed on accept, before the client is offered them, by reason (no_permission, forbidden_peer, pending_limit).",
			"reason"),
		kernel: d("turnd_kernel_relayed_packets_total",
			"Packets the kernel fast path relayed (relay.offload), by direction (to_peer, to_client); part of turnd_relayed_packets_total.",
			"direction"),
		kernelBytes: d("turnd_kernel_relayed_bytes_total",
			"Payload bytes of turnd_kernel_relayed_packets_total, by direction.", "direction"),
		kernelChannels: d("turnd_kernel_offload_entries", "Channels the kernel fast path relays now."),
		kernelPassed: d("turnd_kernel_passed_total",
			"Datagrams the kernel fast path left to user space (or, reason dropped_error, dropped mid-rewrite), by reason.", "reason"),
		// coturn's peer-side totals, updated live here (coturn adds at session end).
		coturnPeerRcvp:  d("turn_total_traffic_peer_rcvp", "Packets received from peers (coturn-compatible)."),
		coturnPeerRcvb:  d("turn_total_traffic_peer_rcvb", "Bytes received from peers (coturn-compatible)."),
		coturnPeerSentp: d("turn_total_traffic_peer_sentp", "Packets sent to peers (coturn-compatible)."),
		coturnPeerSentb: d("turn_total_traffic_peer_sentb", "Bytes sent to peers (coturn-compatible)."),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.allocs, c.coturnAllocs, c.draining, c.accepting, c.deadline,
		c.relayed, c.relayedBytes, c.dropped, c.droppedBytes, c.peerRefused, c.kernel, c.kernelBytes, c.kernelChannels, c.kernelPassed, c.coturnPeerRcvp, c.coturnPeerRcvb, c.coturnPeerSentp, c.coturnPeerSentb} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	if c.src.Allocations != nil {
		by := c.src.Allocations()
		for _, t := range allocation.Transports() {
			gauge(c.allocs, float64(by[t]), t.String())
			gauge(c.coturnAllocs, float64(by[t]), coturnType(t))
		}
	}
	if c.src.Drain != nil {
		st := c.src.Drain()
		gauge(c.draining, b2f(st.Phase != drain.Serving))
		gauge(c.accepting, b2f(st.Accepting))
		dl := 0.0
		if !st.Deadline.IsZero() {
			dl = float64(st.Deadline.Unix())
		}
		gauge(c.deadline, dl)
	}
	if c.src.KernelPassed != nil {
		passed := c.src.KernelPassed()
		if passed == nil { // no kernel path: the family exists, at 0, as the relayed ones do
			passed = map[string]uint64{"no_entry": 0}
		}
		for reason, n := range passed {
			counter(c.kernelPassed, n, reason)
		}
	}
	if t := c.src.Traffic; t != nil {
		t.Settle()
		counter(c.kernel, t.Kernel.ToPeerPackets.Load(), "to_peer")
		counter(c.kernel, t.Kernel.ToClientPackets.Load(), "to_client")
		counter(c.kernelBytes, t.Kernel.ToPeerBytes.Load(), "to_peer")
		counter(c.kernelBytes, t.Kernel.ToClientBytes.Load(), "to_client")
		gauge(c.kernelChannels, float64(t.KernelChannels.Load()))
		counter(c.relayed, t.ToPeerPackets.Load(), "to_peer")
		counter(c.relayed, t.FromPeerPackets.Load(), "from_peer")
		counter(c.relayedBytes, t.ToPeerBytes.Load(), "to_peer")
		counter(c.relayedBytes, t.FromPeerBytes.Load(), "from_peer")
		for _, dir := range []struct {
			name  string
			drops *[traffic.NumReasons]traffic.Drops
			peer  bool
		}{{"to_peer", &t.DroppedToPeer, true}, {"to_client", &t.DroppedToClient, false}} {
			for _, r := range traffic.Reasons(dir.peer) {
				counter(c.dropped, dir.drops[r].Packets.Load(), dir.name, r.String())
				counter(c.droppedBytes, dir.drops[r].Bytes.Load(), dir.name, r.String())
			}
		}
		for r := range traffic.NumPeerRefusals {
			counter(c.peerRefused, t.PeerConnsRefused[r].Load(), r.String())
		}
		counter(c.coturnPeerRcvp, t.FromPeerPackets.Load())
		counter(c.coturnPeerRcvb, t.FromPeerBytes.Load())
		counter(c.coturnPeerSentp, t.ToPeerPackets.Load())
		counter(c.coturnPeerSentb, t.ToPeerBytes.Load())
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
