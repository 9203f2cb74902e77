package e2e

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUclientDualAllocation runs coturn's turnutils_uclient -Z (a dual
// allocation: ADDITIONAL-ADDRESS-FAMILY IPv6, coturn's type 0x8032) against
// turnd relaying in both families, to an IPv4 peer and to an IPv6 one (and
// to the IPv6 one with uclient on TCP): each run must relay every message both ways (RFC 8656 §7.2, and
// docs/control-plane.md section 3). uclient never releases the second
// allocation of each pair and sends its Refreshes with REQUESTED-ADDRESS-FAMILY
// 1, 2 or none at random, so its totals are asserted, and turnd's log line of
// each allocation it created, not its releases.
func TestUclientDualAllocation(t *testing.T) {
	cfg := testConfig()
	cfg.Relay.Address = "127.0.0.1,::1"
	srv := start(t, cfg)

	const m, n = 4, 50
	created := 0
	for _, tc := range []struct {
		name, server, peer string
		args               []string
	}{
		{"udp to 127.0.0.1", srv.UDP, "127.0.0.1", nil},
		{"udp to ::1", srv.UDP, "::1", nil},
		{"tcp control to ::1", srv.TCP, "::1", []string{"-t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := strconv.Itoa(startPeerAt(t, tc.peer))
			args := append([]string{"-Z", "-u", "demo", "-w", "demo", "-e", tc.peer, "-r", peer,
				"-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-l", "120"}, tc.args...)
			requireZeroLoss(t, uclient(t, uclientTimeout, tc.server, args...), m*n)
			// uclient makes two allocations per client, each a dual one.
			created += 2 * m
			srv.waitLogCount("allocation created", created, 5*time.Second)
			requireDualRelays(t, srv)
		})
	}
}

// requireDualRelays checks that every allocation turnd logged as created
// got an IPv4 and an IPv6 relayed address (its "relay" field lists both).
func requireDualRelays(t *testing.T, srv *turnd) {
	t.Helper()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, l := range srv.lines {
		if l["msg"] != "allocation created" {
			continue
		}
		relay, _ := l["relay"].(string)
		var v4, v6 int
		for _, a := range strings.Split(relay, ",") {
			ap, err := netip.ParseAddrPort(a)
			switch {
			case err != nil:
				t.Errorf("allocation created with relay %q: %v", relay, err)
			case ap.Addr().Is4():
				v4++
			default:
				v6++
			}
		}
		if v4 != 1 || v6 != 1 {
			t.Errorf("allocation created with relay %q, want an IPv4 and an IPv6 address", relay)
		}
	}
}
