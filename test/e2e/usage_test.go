package e2e

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// reBytes is uclient's closing byte count, both ways, over all its clients.
var reBytes = regexp.MustCompile(`start_mclient: tot_send_bytes ~ (\d+), tot_recv_bytes ~ (\d+)`)

// TestUsageRecordsMatchUclientTotals: the usage records of uclient's
// allocations add up to the bytes and messages uclient says it sent and
// received, over UDP and over TCP.
func TestUsageRecordsMatchUclientTotals(t *testing.T) {
	srv := start(t, testConfig())
	peer := strconv.Itoa(startPeer(t))
	const m, n, size = 4, 40, 120
	for _, tc := range []struct {
		name, server string
		flags        []string
	}{
		{"udp", srv.UDP, nil},
		{"tcp", srv.TCP, []string{"-t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(srv.usageRecords(tc.name, "released"))
			args := append(append([]string{}, tc.flags...), "-u", "demo", "-w", "demo", "-e", "127.0.0.1", "-r", peer,
				"-X", "-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-l", strconv.Itoa(size))
			r := uclient(t, uclientTimeout, tc.server, args...)
			requireZeroLoss(t, r, m*n)
			match := reBytes.FindAllStringSubmatch(r.out, -1)
			if match == nil {
				t.Fatalf("no byte totals in uclient's output:\n%s", tail(r.out))
			}
			sentBytes, _ := strconv.Atoi(match[len(match)-1][1])
			recvBytes, _ := strconv.Atoi(match[len(match)-1][2])

			var recs []map[string]any
			deadline := time.Now().Add(10 * time.Second)
			for {
				recs = srv.usageRecords(tc.name, "released")[before:]
				if len(recs) >= m || time.Now().After(deadline) {
					break
				}
				srv.waitLogCount("allocation deleted", len(srv.usageRecords("", ""))+1, time.Until(deadline))
			}
			var toBytes, fromBytes, toPkts, fromPkts float64
			for _, rec := range recs {
				toBytes += rec["to_peer_bytes"].(float64)
				fromBytes += rec["from_peer_bytes"].(float64)
				toPkts += rec["to_peer_packets"].(float64)
				fromPkts += rec["from_peer_packets"].(float64)
				if rec["user"] != "demo" || rec["relay"] == "" || rec["client"] == "" {
					t.Errorf("record without its user, client or relay: %v", rec)
				}
			}
			if len(recs) != m || int(toBytes) != sentBytes || int(fromBytes) != recvBytes ||
				int(toPkts) != r.sent || int(fromPkts) != r.recv {
				t.Fatalf("%d released records with %v/%v bytes and %v/%v packets to/from peers; "+
					"uclient: %d clients, %d/%d bytes, %d/%d messages sent/received\n%v",
					len(recs), toBytes, fromBytes, toPkts, fromPkts, m, sentBytes, recvBytes, r.sent, r.recv, recs)
			}
		})
	}
}

// usageRecords returns the usage records logged so far over transport
// with reason (any, where empty).
func (p *turnd) usageRecords(transport, reason string) []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, l := range p.lines {
		if l["msg"] != "allocation deleted" {
			continue
		}
		if (transport == "" || l["transport"] == transport) && (reason == "" || l["reason"] == reason) {
			out = append(out, l)
		}
	}
	return out
}
