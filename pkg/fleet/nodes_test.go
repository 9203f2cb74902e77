package fleet

import (
	"slices"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/drain/draintest"
)

// names lists the nodes' names in order.
func names(nodes []Node) []string {
	var s []string
	for _, n := range nodes {
		s = append(s, n.Name)
	}
	return s
}

// publishNow publishes s and writes it at once (the heartbeat would a
// beat later).
func publishNow(t *testing.T, c *Client, s NodeState) {
	t.Helper()
	c.Publish(s)
	if err := c.beat(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}

// TestLeastLoaded: placement picks live, serving nodes by fewest
// allocations, then lower bps, then name; draining and lapsed nodes and
// the excluded one are never picked.
func TestLeastLoaded(t *testing.T) {
	r := startRedis(t)
	for _, n := range []struct {
		name   string
		state  string
		allocs int
		bps    uint64
	}{
		{"a", StateServing, 5, 100},
		{"b", StateServing, 2, 900},
		{"c", "", 2, 100}, // empty means serving
		{"d", StateDraining, 0, 0},
		{"e", StateServing, 2, 100},
	} {
		c := r.open(Options{Node: n.name, Lease: 10 * time.Second})
		publishNow(t, c, NodeState{State: n.state, Allocations: n.allocs, BPS: n.bps,
			URIs: []string{"turn:" + n.name + ".example:3478"}})
	}
	gone := r.open(Options{Node: "gone", Clock: draintest.NewFakeClock(time.Now())}) // never beats again
	publishNow(t, gone, NodeState{})
	pick := r.open(Options{Node: "pick", Lease: 10 * time.Second})
	publishNow(t, pick, NodeState{Allocations: 9})

	eventually(t, 2*testLease, "gone's lease passes", func() bool {
		nodes, err := pick.Nodes(ctxT(t))
		return err == nil && !slices.Contains(names(nodes), "gone")
	})
	for _, tc := range []struct {
		n       int
		exclude string
		want    []string
	}{
		{3, "", []string{"c", "e", "b"}},
		{3, "c", []string{"e", "b", "a"}},
		{10, "pick", []string{"c", "e", "b", "a"}},
		{0, "", nil},
	} {
		got, err := pick.LeastLoaded(ctxT(t), tc.n, tc.exclude)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names(got), tc.want) {
			t.Errorf("LeastLoaded(%d, %q) = %v, want %v", tc.n, tc.exclude, names(got), tc.want)
		}
	}
	nodes, err := pick.Nodes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "d", "e", "pick"}; !slices.Equal(names(nodes), want) {
		t.Fatalf("Nodes() = %v, want %v", names(nodes), want)
	}
	d := nodes[3]
	if d.State != StateDraining || !slices.Equal(d.URIs, []string{"turn:d.example:3478"}) ||
		d.Updated.IsZero() || !d.Expires.After(d.Updated) {
		t.Errorf("Nodes()[d] = %+v", d)
	}
}

// TestSessionsAcrossNodes: every live node's published sessions are listed
// with their node; a republished list replaces the old, and a list Redis
// lost is written again by the next beat.
func TestSessionsAcrossNodes(t *testing.T) {
	r := startRedis(t)
	a := r.open(Options{Node: "a", Lease: 10 * time.Second})
	b := r.open(Options{Node: "b", Lease: 10 * time.Second})
	started := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s1 := Session{ID: "192.0.2.1:50000", User: "alice", Client: "198.51.100.1:1000", Transport: "udp",
		Relay: "192.0.2.1:50000", StartedAt: started}
	s2 := Session{ID: "192.0.2.1:50002", User: "bob", Node: "ignored"}
	s3 := Session{ID: "192.0.2.2:50000", User: "carol"}
	publishNow(t, b, NodeState{Sessions: []Session{s3}})
	publishNow(t, a, NodeState{Sessions: []Session{s1, s2}})

	s1.Node, s2.Node, s3.Node = "a", "a", "b"
	check := func(want ...Session) {
		t.Helper()
		got, err := b.Sessions(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(x, y Session) bool { return x == y }) {
			t.Errorf("Sessions() = %+v\nwant %+v", got, want)
		}
	}
	check(s1, s2, s3)

	publishNow(t, a, NodeState{Sessions: []Session{s2}})
	check(s2, s3)

	if err := r.admin().Del(ctxT(t), "t:sessions:a").Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.beat(ctxT(t)); err != nil { // finds them missing
		t.Fatal(err)
	}
	check(s2, s3)
}

// TestDrainingLeavesPlacementAtOnce: a node that starts draining is no
// longer picked well before its next beat (Lease/3 = 3.3s here).
func TestDrainingLeavesPlacementAtOnce(t *testing.T) {
	r := startRedis(t)
	a := r.open(Options{Node: "a", Lease: 10 * time.Second})
	b := r.open(Options{Node: "b", Lease: 10 * time.Second})
	publishNow(t, a, NodeState{State: StateServing})
	a.Publish(NodeState{State: StateDraining})
	eventually(t, 2*time.Second, "a out of placement", func() bool {
		nodes, err := b.LeastLoaded(ctxT(t), 5, "b")
		return err == nil && len(nodes) == 0
	})
}
