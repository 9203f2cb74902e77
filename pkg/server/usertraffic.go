package server

import (
	"slices"
	"sync"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/config"
)

// userTraffic sums relayed traffic per labelled user (http.metrics_users)
// and under config.OtherUsers for everyone else, so the series stay as few
// as the list. It adds up usage records and live allocations' counters at
// scrape time: nothing per packet.
type userTraffic struct {
	users []string // fixed at start; nil: off
	mu    sync.Mutex
	ended map[string]traffic.Usage // by label: allocations that ended
	// shown is what the last scrape reported: an allocation between its
	// removal from the registry and its usage record is in neither sum,
	// and a counter must not go back.
	shown map[string]traffic.Usage
}

func newUserTraffic(users []string) *userTraffic {
	if len(users) == 0 {
		return &userTraffic{}
	}
	return &userTraffic{users: slices.Clone(users), ended: map[string]traffic.Usage{}, shown: map[string]traffic.Usage{}}
}

func (t *userTraffic) label(user string) string {
	if slices.Contains(t.users, user) {
		return user
	}
	return config.OtherUsers
}

// add counts an ended allocation's usage.
func (t *userTraffic) add(user string, u traffic.Usage) {
	if t.users == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.label(user)
	t.ended[l] = sum(t.ended[l], u)
}

func sum(a, b traffic.Usage) traffic.Usage {
	return traffic.Usage{
		ToPeerPackets: a.ToPeerPackets + b.ToPeerPackets, ToPeerBytes: a.ToPeerBytes + b.ToPeerBytes,
		FromPeerPackets: a.FromPeerPackets + b.FromPeerPackets, FromPeerBytes: a.FromPeerBytes + b.FromPeerBytes,
		Permissions: a.Permissions + b.Permissions, Channels: a.Channels + b.Channels,
		RateLimited: a.RateLimited + b.RateLimited, NoPermission: a.NoPermission + b.NoPermission,
	}
}

// atLeast is a with each field raised to b's where b's is larger.
func atLeast(a, b traffic.Usage) traffic.Usage {
	return traffic.Usage{
		ToPeerPackets: max(a.ToPeerPackets, b.ToPeerPackets), ToPeerBytes: max(a.ToPeerBytes, b.ToPeerBytes),
		FromPeerPackets: max(a.FromPeerPackets, b.FromPeerPackets), FromPeerBytes: max(a.FromPeerBytes, b.FromPeerBytes),
		Permissions: max(a.Permissions, b.Permissions), Channels: max(a.Channels, b.Channels),
		RateLimited: max(a.RateLimited, b.RateLimited), NoPermission: max(a.NoPermission, b.NoPermission),
	}
}

// UserTraffic returns the traffic relayed so far for each user in
// http.metrics_users and, under config.OtherUsers, everyone else: ended
// allocations' plus live ones'. nil when http.metrics_users is empty.
// Each figure only grows from one call to the next.
func (s *Server) UserTraffic() map[string]traffic.Usage {
	s.relay.Settle()
	return s.users.snapshot(func(each func(user string, u traffic.Usage)) {
		for _, info := range s.table.List("") {
			each(info.User, info.Usage)
		}
	})
}

// snapshot sums the ended allocations' usage and the live ones' that live
// reports, by label.
func (t *userTraffic) snapshot(live func(each func(user string, u traffic.Usage))) map[string]traffic.Usage {
	if t.users == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]traffic.Usage, len(t.users)+1)
	for _, l := range append(slices.Clone(t.users), config.OtherUsers) {
		out[l] = t.ended[l]
	}
	// Listed under the lock: an allocation is removed from the registry
	// before add counts it, so it is never in both sums.
	live(func(user string, u traffic.Usage) {
		l := t.label(user)
		out[l] = sum(out[l], u)
	})
	for l, u := range out {
		out[l] = atLeast(u, t.shown[l])
		t.shown[l] = out[l]
	}
	return out
}
