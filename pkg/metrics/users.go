package metrics

import "github.com/prometheus/client_golang/prometheus"

// UserTraffic is what one user label relayed so far.
type UserTraffic struct {
	ToPeerPackets, ToPeerBytes     uint64
	FromPeerPackets, FromPeerBytes uint64
	RateLimited                    uint64 // datagrams dropped past limits.max_bps
}

// usersCollector reports relayed traffic per user label at scrape time.
// The labels are what the source returns: turnd's server gives the users
// of http.metrics_users and "other", never one label per REST username.
type usersCollector struct {
	traffic     func() map[string]UserTraffic
	bytes, pkts *prometheus.Desc
	rateLimited *prometheus.Desc
}

// RegisterUsers registers turnd_user_bytes_total{user,direction},
// turnd_user_packets_total{user,direction} and
// turnd_user_rate_limited_total{user} on reg, read from traffic (relayed so
// far by user label, each figure only growing) when scraped.
func RegisterUsers(reg prometheus.Registerer, traffic func() map[string]UserTraffic) error {
	return reg.Register(&usersCollector{
		traffic: traffic,
		bytes: prometheus.NewDesc("turnd_user_bytes_total",
			"Payload bytes relayed for the users of http.metrics_users (the rest: user=\"other\"), by direction (to_peer, from_peer).",
			[]string{"user", "direction"}, nil),
		pkts: prometheus.NewDesc("turnd_user_packets_total",
			"Packets relayed for the users of http.metrics_users (the rest: user=\"other\"), by direction (to_peer, from_peer).",
			[]string{"user", "direction"}, nil),
		rateLimited: prometheus.NewDesc("turnd_user_rate_limited_total",
			"Datagrams dropped past limits.max_bps for the users of http.metrics_users (the rest: user=\"other\").",
			[]string{"user"}, nil),
	})
}

func (c *usersCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.bytes
	ch <- c.pkts
	ch <- c.rateLimited
}

func (c *usersCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for user, u := range c.traffic() {
		counter(c.bytes, u.ToPeerBytes, user, "to_peer")
		counter(c.bytes, u.FromPeerBytes, user, "from_peer")
		counter(c.pkts, u.ToPeerPackets, user, "to_peer")
		counter(c.pkts, u.FromPeerPackets, user, "from_peer")
		counter(c.rateLimited, u.RateLimited, user)
	}
}
