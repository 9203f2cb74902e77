package server_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/turnd/turnd/pkg/metrics"
)

// TestUserMetricsLabelOnlyListedUsers: with http.metrics_users [demo],
// /metrics has demo's traffic under user="demo" and bob's and carol's
// summed under user="other" — live allocations' and ended ones' — and no
// series of their own, whatever their names.
func TestUserMetricsLabelOnlyListedUsers(t *testing.T) {
	opts := testOptions()
	opts.Config.Auth.Users["bob"] = "bob"
	opts.Config.Auth.Users["carol"] = "carol"
	opts.Config.HTTP.MetricsUsers = []string{"demo"}
	records := usageLog(&opts)
	s := start(t, opts)
	reg := prometheus.NewRegistry()
	if err := metrics.RegisterUsers(reg, func() map[string]metrics.UserTraffic {
		out := map[string]metrics.UserTraffic{}
		for user, u := range s.UserTraffic() {
			out[user] = metrics.UserTraffic{ToPeerPackets: u.ToPeerPackets, ToPeerBytes: u.ToPeerBytes,
				FromPeerPackets: u.FromPeerPackets, FromPeerBytes: u.FromPeerBytes, RateLimited: u.RateLimited}
		}
		return out
	}); err != nil {
		t.Fatal(err)
	}
	peer := echoPeer(t)
	for _, c := range []struct{ user, data string }{{"demo", "hello"}, {"bob", "abc"}, {"carol", "xy"}} {
		cl := dialAs(t, s, "udp", c.user, c.user)
		cl.MustAllocate()
		mustPermit(t, cl, peer)
		mustEcho(t, cl, peer, c.data)
		awaitUserToPeer(t, s, c.user, uint64(len(c.data)))
		if c.user == "carol" {
			if code := cl.Refresh(0); code != 0 {
				t.Fatalf("carol's release: %d", code)
			}
			nextRecord(t, records) // her usage is now an ended allocation's
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP turnd_user_bytes_total Payload bytes relayed for the users of http.metrics_users (the rest: user="other"), by direction (to_peer, from_peer).
# TYPE turnd_user_bytes_total counter
turnd_user_bytes_total{direction="from_peer",user="demo"} 5
turnd_user_bytes_total{direction="from_peer",user="other"} 5
turnd_user_bytes_total{direction="to_peer",user="demo"} 5
turnd_user_bytes_total{direction="to_peer",user="other"} 5
# HELP turnd_user_packets_total Packets relayed for the users of http.metrics_users (the rest: user="other"), by direction (to_peer, from_peer).
# TYPE turnd_user_packets_total counter
turnd_user_packets_total{direction="from_peer",user="demo"} 1
turnd_user_packets_total{direction="from_peer",user="other"} 2
turnd_user_packets_total{direction="to_peer",user="demo"} 1
turnd_user_packets_total{direction="to_peer",user="other"} 2
`), "turnd_user_bytes_total", "turnd_user_packets_total"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestUserMetricsOffByDefault: without http.metrics_users there is no
// per-user traffic to label.
func TestUserMetricsOffByDefault(t *testing.T) {
	s := start(t, testOptions())
	c := dial(t, s, "udp")
	c.MustAllocate()
	if got := s.UserTraffic(); got != nil {
		t.Fatalf("UserTraffic with no http.metrics_users: %v", got)
	}
}
