package server

import (
	"testing"

	"github.com/turnd/turnd/internal/traffic"
)

// TestUserTrafficNeverGoesBack: an allocation removed from the registry
// but not yet counted as ended is in neither sum for a moment; the
// figures a scrape saw are kept until the sums pass them again.
func TestUserTrafficNeverGoesBack(t *testing.T) {
	ut := newUserTraffic([]string{"alice"})
	live := traffic.Usage{ToPeerBytes: 100, FromPeerBytes: 40}
	alive := func(each func(string, traffic.Usage)) { each("alice", live); each("mallory", live) }
	none := func(func(string, traffic.Usage)) {}

	if got := ut.snapshot(alive); got["alice"].ToPeerBytes != 100 || got["other"].FromPeerBytes != 40 || len(got) != 2 {
		t.Fatalf("live: %+v", got)
	}
	if got := ut.snapshot(none); got["alice"].ToPeerBytes != 100 || got["other"].FromPeerBytes != 40 {
		t.Fatalf("between removal and record the figures went back: %+v", got)
	}
	ut.add("alice", traffic.Usage{ToPeerBytes: 120, FromPeerBytes: 40})
	ut.add("mallory", traffic.Usage{ToPeerBytes: 100, FromPeerBytes: 50})
	if got := ut.snapshot(none); got["alice"].ToPeerBytes != 120 || got["other"].FromPeerBytes != 50 {
		t.Fatalf("after the records: %+v", got)
	}
}
