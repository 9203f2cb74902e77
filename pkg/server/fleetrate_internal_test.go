package server

import (
	"maps"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/config"
)

// TestFleetAllowance: under the limit a node may use all the other nodes
// leave; over it each node scales itself down by the fleet's excess; never
// below limit/8.
func TestFleetAllowance(t *testing.T) {
	for _, tc := range []struct {
		limit       int64
		own, others uint64
		want        int64
	}{
		{1000, 0, 0, 1000},
		{1000, 200, 300, 700},
		{1000, 500, 500, 500}, // at the limit both rules agree
		{1000, 0, 1000, 125},
		{1000, 0, 5000, 125},
		{1000, 1000, 1000, 500},
		{1000, 600, 600, 500},
		{1000, 300, 1200, 200},
		{1000, 100, 1900, 125}, // 50 by the scaling: the floor
		{4, 0, 10, 1},          // a tiny limit keeps a floor of 1 bit/s, not 0 (unlimited)
	} {
		if got := fleetAllowance(tc.limit, tc.own, tc.others); got != tc.want {
			t.Errorf("fleetAllowance(%d, own %d, others %d) = %d, want %d", tc.limit, tc.own, tc.others, got, tc.want)
		}
	}
}

// TestFleetAllowanceSettles: nodes whose users want more than the limit,
// each setting its allowance from the others' figures of the last beat,
// settle at the limit together instead of swinging between too much and
// too little: whether the nodes beat in turn or at once (the worst case,
// every node acting on the same stale figures).
func TestFleetAllowanceSettles(t *testing.T) {
	const limit = 1_000_000
	for _, together := range []bool{false, true} {
		for _, demand := range [][]uint64{
			{1 << 40, 1 << 40},
			{1 << 40, 1 << 40, 1 << 40},
			{200_000, 1 << 40},
			{100_000, 50_000, 1 << 40},
		} {
			settle(t, limit, demand, together)
		}
	}
}

// settle runs 60 beats of nodes with the given demands and fails the test
// unless the last 20 relay the limit ±10 % in all.
func settle(t *testing.T, limit int64, demand []uint64, together bool) {
	t.Helper()
	n := len(demand)
	allow := make([]int64, n)
	for i := range allow {
		allow[i] = limit
	}
	for step := range 60 {
		rate := make([]uint64, n)
		var total uint64
		for i := range n {
			rate[i] = min(demand[i], uint64(allow[i]))
			total += rate[i]
		}
		if step >= 40 && (total < uint64(limit)*9/10 || total > uint64(limit)*11/10) {
			t.Fatalf("demands %v (together %v): beat %d relays %d bit/s in all (%v), want the limit %d ±10%%",
				demand, together, step, total, rate, limit)
		}
		for i := range n {
			if !together && i != step%n {
				continue // one node beats at a time
			}
			allow[i] = fleetAllowance(limit, rate[i], total-rate[i])
		}
	}
}

// TestUserRatesFollowTheFleet: with a fleet a user's shared rate is the
// node's allowance, from the first allocation on and at each set; an
// unlimited user stays unlimited; without the fleet the whole limit is back.
func TestUserRatesFollowTheFleet(t *testing.T) {
	f := NewFakeFleetRates(map[string]uint64{"alice": 400, "bob": 5000})
	var u userRates
	u.fleet.rates = f
	alice := u.acquire("alice", limitsOf(1000))
	if got := alice.Rate(); got != 600 {
		t.Errorf("alice's first allocation: rate %d, want 600 (1000 less the others' 400)", got)
	}
	limits := func() config.Limits {
		return config.Limits{UserTotalBPS: 1000, UserTotalBPSOverrides: map[string]int64{"bob": 0}}
	}
	bob := u.acquire("bob", limits)
	f.SetOthers(map[string]uint64{"alice": 3000, "bob": 5000})
	u.set(limits)
	if got := alice.Rate(); got != 125 {
		t.Errorf("alice with the others over her limit: rate %d, want the floor 125", got)
	}
	if got := bob.Rate(); got != 0 {
		t.Errorf("bob, unlimited: rate %d, want 0 (unlimited)", got)
	}
	u.fleet.rates = nil
	u.set(limits)
	if got := alice.Rate(); got != 1000 {
		t.Errorf("alice without a fleet: rate %d, want her whole limit", got)
	}
}

// TestUserMeter: a user's rate is the larger way of the wire bytes its
// allocations relayed since the last sample; the first sample is only a
// baseline, a new allocation counts from zero, an ended one drops out.
func TestUserMeter(t *testing.T) {
	var m userMeter
	a1, a2, b1 := new(allocation.Allocation), new(allocation.Allocation), new(allocation.Allocation)
	users := map[string]bool{"alice": true, "bob": true}
	t0 := time.Unix(1000, 0)
	got := m.rates(t0, []allocWire{{a1, "alice", [2]uint64{1000, 0}}, {b1, "bob", [2]uint64{50, 50}}}, users)
	if !maps.Equal(got, map[string]uint64{"alice": 0, "bob": 0}) {
		t.Errorf("first sample = %v, want every user at 0", got)
	}
	got = m.rates(t0.Add(2*time.Second), []allocWire{
		{a1, "alice", [2]uint64{3000, 500}},
		{a2, "alice", [2]uint64{500, 100}}, // opened since
		{b1, "bob", [2]uint64{50, 50}},
	}, users)
	// alice: 2500 bytes to peers (the larger way) in 2 s.
	if want := map[string]uint64{"alice": 10_000, "bob": 0}; !maps.Equal(got, want) {
		t.Errorf("second sample = %v, want %v", got, want)
	}
	if again := m.rates(t0.Add(2*time.Second), nil, users); !maps.Equal(again, got) {
		t.Errorf("a sample repeated at the same time = %v, want the last %v", again, got)
	}
	got = m.rates(t0.Add(3*time.Second), []allocWire{{a2, "alice", [2]uint64{600, 1100}}}, users)
	if want := map[string]uint64{"alice": 8000, "bob": 0}; !maps.Equal(got, want) {
		t.Errorf("third sample (a1 and bob's ended) = %v, want %v", got, want)
	}
}
