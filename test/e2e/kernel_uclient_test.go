package e2e

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// TestKernelPathUclient: coturn's uclient over UDP with channels, through
// the topology's namespaces. With relay.offload: tc nothing is lost, the
// kernel path counts at least 90 % of uclient's messages in each direction,
// and the usage records and /status still add up to uclient's own totals
// exactly. With relay.offload: off the same run goes through user space and
// the kernel counters exist at 0.
func TestKernelPathUclient(t *testing.T) {
	k := newKernelNet(t)
	k.startEchoPeer(t, kPeer4)
	for _, tc := range []struct {
		offload   string
		minKernel float64 // share of uclient's messages the kernel path must count, each way
	}{{"tc", 0.9}, {"off", 0}} {
		t.Run(tc.offload, func(t *testing.T) {
			srv := k.start(t, kernelConfig(t), tc.offload)
			// 4 clients × 500 messages of 100 bytes at one per 5 ms each: 800
			// messages a second each way, 2.5 s of traffic.
			const m, n, size = 4, 500, 100
			r := k.uclient(t, uclientTimeout, net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)),
				"-u", "demo", "-w", "demo", "-e", kPeer4, "-r", strconv.Itoa(kEchoPort), "-X", "-c",
				"-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-l", strconv.Itoa(size), "-z", "5")
			requireZeroLoss(t, r, m*n)
			match := reBytes.FindAllStringSubmatch(r.out, -1)
			if match == nil {
				t.Fatalf("no byte totals in uclient's output:\n%s", tail(r.out))
			}
			sentBytes, _ := strconv.ParseUint(match[len(match)-1][1], 10, 64)
			recvBytes, _ := strconv.ParseUint(match[len(match)-1][2], 10, 64)

			got := srv.kernel(t)
			if got.toPeer < tc.minKernel*float64(r.sent) || got.toClient < tc.minKernel*float64(r.recv) {
				t.Errorf("kernel path counted %v to the peer and %v to the client of %d/%d messages, want at least %.0f %% each way",
					got.toPeer, got.toClient, r.sent, r.recv, 100*tc.minKernel)
			}
			if tc.minKernel == 0 && (got.toPeer != 0 || got.toClient != 0) {
				t.Errorf("relay.offload: off, yet the kernel path counted %v to the peer and %v to the client", got.toPeer, got.toClient)
			}

			// uclient releases the allocations it relayed on as it ends, not
			// the idle one it makes beside each: end those too, then every
			// allocation has its record.
			srv.waitLogCount("allocation deleted", m, 10*time.Second)
			if code, out := srv.disconnect(t, "demo"); code != 0 {
				t.Fatalf("turnd disconnect --user demo: exit %d: %s", code, out)
			}
			srv.waitLogCount("allocation deleted", srv.logCount("allocation created"), 5*time.Second)
			var toBytes, fromBytes, toPkts, fromPkts uint64
			for _, rec := range srv.usageRecords("udp", "") {
				toBytes += uint64(rec["to_peer_bytes"].(float64))
				fromBytes += uint64(rec["from_peer_bytes"].(float64))
				toPkts += uint64(rec["to_peer_packets"].(float64))
				fromPkts += uint64(rec["from_peer_packets"].(float64))
			}
			if toBytes != sentBytes || fromBytes != recvBytes || toPkts != uint64(r.sent) || fromPkts != uint64(r.recv) {
				t.Errorf("usage records: %d/%d bytes and %d/%d packets to/from the peer; uclient: %d/%d bytes, %d/%d messages sent/received",
					toBytes, fromBytes, toPkts, fromPkts, sentBytes, recvBytes, r.sent, r.recv)
			}
			st := srv.status(t)
			if st.Offload == nil || st.Offload.Mode != tc.offload {
				t.Errorf("/status offload %+v, want mode %s", st.Offload, tc.offload)
			}
			if st.Allocations.Total != 0 {
				t.Errorf("/status: %d allocations live after uclient ended", st.Allocations.Total)
			}
			if tr := st.Traffic; tr.ToPeerBytes != sentBytes || tr.FromPeerBytes != recvBytes ||
				tr.ToPeerPackets != uint64(r.sent) || tr.FromPeerPackets != uint64(r.recv) {
				t.Errorf("/status traffic %+v; uclient: %d/%d bytes, %d/%d messages sent/received",
					tr, sentBytes, recvBytes, r.sent, r.recv)
			}
			if tr := st.Traffic; float64(tr.KernelToPeerPackets) != got.toPeer || float64(tr.KernelToClientPackets) != got.toClient {
				t.Errorf("/status says the kernel relayed %d/%d packets to the peer/client, /metrics %v/%v",
					tr.KernelToPeerPackets, tr.KernelToClientPackets, got.toPeer, got.toClient)
			}
		})
	}
}
