package fleet

import (
	"slices"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/drain/draintest"
)

// disconnects records OnDisconnect's calls.
type disconnects chan [2]string

func (ch disconnects) record(user, node string) { ch <- [2]string{user, node} }

// TestDisconnectReachesEveryNode: one node's Disconnect is heard by every
// node, itself included, with the asking node's name.
func TestDisconnectReachesEveryNode(t *testing.T) {
	r := startRedis(t)
	var chs []disconnects
	var nodes []*Client
	for _, name := range []string{"a", "b", "c"} {
		ch := make(disconnects, 4)
		chs = append(chs, ch)
		nodes = append(nodes, r.open(Options{Node: name, OnDisconnect: ch.record}))
	}
	if err := nodes[1].Disconnect(ctxT(t), "alice"); err != nil {
		t.Fatal(err)
	}
	for i, ch := range chs {
		select {
		case got := <-ch:
			if got != [2]string{"alice", "b"} {
				t.Errorf("%s: OnDisconnect%v, want (alice, b)", nodes[i].Node(), got)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: no OnDisconnect within 5s", nodes[i].Node())
		}
	}
}

// revocations records OnRevoked's calls.
type revocations chan []string

func (ch revocations) record(users []string) { ch <- users }

// until waits for OnRevoked to report want, skipping older unions.
func (ch revocations) until(t *testing.T, who string, want ...string) {
	t.Helper()
	timeout := time.After(2 * time.Second) // under a beat (Lease/3 = 3.3s)
	for {
		select {
		case got := <-ch:
			if slices.Equal(got, want) {
				return
			}
		case <-timeout:
			t.Fatalf("%s: OnRevoked(%v) not within 2s", who, want)
		}
	}
}

// TestRevokedUnion: every node's revoked users reach every node as one
// union, a stopped node's list included, and replacing a list replaces it.
func TestRevokedUnion(t *testing.T) {
	r := startRedis(t)
	cha, chc := make(revocations, 16), make(revocations, 16)
	a := r.open(Options{Node: "a", Lease: 10 * time.Second, OnRevoked: cha.record})
	b := r.open(Options{Node: "b", Lease: 10 * time.Second})
	c := r.open(Options{Node: "c", Lease: 10 * time.Second, OnRevoked: chc.record})

	a.SetRevoked([]string{"mallory", "eve", "mallory"})
	b.SetRevoked([]string{"trudy"})
	// Lease 10s: a beat is seconds away, so only the announcement can be
	// what brings the union to c this quickly.
	chc.until(t, "c", "eve", "mallory", "trudy")
	cha.until(t, "a", "eve", "mallory", "trudy")
	if got := c.Revoked(); !slices.Equal(got, []string{"eve", "mallory", "trudy"}) {
		t.Errorf("c.Revoked() = %v", got)
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	a.SetRevoked([]string{"eve"})
	chc.until(t, "c", "eve", "trudy") // b's list outlives b
	c.SetRevoked(nil)
	if got := c.Revoked(); !slices.Equal(got, []string{"eve", "trudy"}) {
		t.Errorf("c.Revoked() = %v", got)
	}
}

// TestControlSurvivesRestart: after Redis restarts empty, the nodes listen
// again (a Disconnect reaches both) and write their revoked lists again.
func TestControlSurvivesRestart(t *testing.T) {
	r := startRedis(t)
	ca, cb := draintest.NewFakeClock(time.Now()), draintest.NewFakeClock(time.Now())
	da, db := make(disconnects, 4), make(disconnects, 4)
	cha, chb := make(changes, 8), make(changes, 8)
	a := r.open(Options{Node: "a", Lease: 10 * time.Second, Clock: ca, OnChange: cha.record, OnDisconnect: da.record})
	b := r.open(Options{Node: "b", Lease: 10 * time.Second, Clock: cb, OnChange: chb.record, OnDisconnect: db.record})
	a.SetRevoked([]string{"eve"})
	eventually(t, 2*time.Second, "a's list written", func() bool {
		return slices.Equal(b.Revoked(), []string{"eve"})
	})

	r.stop()
	cha.next(t, false)
	chb.next(t, false)
	r.start()
	probeUntilUp(t, ca, a)
	probeUntilUp(t, cb, b)
	cha.next(t, true)
	chb.next(t, true)
	d := r.open(Options{Node: "d"})
	if got := d.Revoked(); !slices.Equal(got, []string{"eve"}) {
		t.Errorf("a new node's Revoked() after the restart = %v, want [eve]", got)
	}
	// The subscriptions come back on their own connections, after Up:
	// retry until both hear one.
	heard := map[string]bool{}
	eventually(t, 5*time.Second, "a Disconnect heard by a and b", func() bool {
		if err := d.Disconnect(ctxT(t), "alice"); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case <-da:
				heard["a"] = true
				continue
			case <-db:
				heard["b"] = true
				continue
			case <-time.After(20 * time.Millisecond):
			}
			return heard["a"] && heard["b"]
		}
	})
}

// TestIdleSubscriptionStaysUp: a control channel with no traffic for
// several beats is kept alive by pings and is not taken for an outage.
// The lease is longer than testLease: its third is the deadline of every
// beat and ping, which a loaded runner must meet for the test to be about
// the quiet channel.
func TestIdleSubscriptionStaysUp(t *testing.T) {
	r := startRedis(t)
	ch := make(changes, 4)
	const lease = 1500 * time.Millisecond
	a := r.open(Options{Node: "a", Lease: lease, OnChange: ch.record}) // receive timeout Lease/3 = 500ms
	start := time.Now()
	eventually(t, 10*lease, "four receive timeouts of quiet", func() bool {
		ch.none(t)
		return time.Since(start) > 4*lease/3
	})
	if s := a.Stats(); !s.Up || s.Outages != 0 {
		t.Errorf("after a quiet control channel: %+v", s)
	}
}

// TestSilentRedisNoticed: a Redis that stops answering is noticed by the
// subscription's unanswered ping even when no call is made (this node's
// clock is fake, so it does not beat either).
func TestSilentRedisNoticed(t *testing.T) {
	r := startRedis(t)
	ch := make(changes, 4)
	r.open(Options{Node: "a", OnChange: ch.record, Clock: draintest.NewFakeClock(time.Now())})
	r.pause()
	defer r.resume()
	ch.next(t, false) // within two receive timeouts (2 × Lease/3)
}
