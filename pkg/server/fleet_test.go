package server_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/redistest"
	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
)

// fleetOptions is a test server that is node name of the fleet on r.
func fleetOptions(r *redistest.Server, name string) server.Options {
	opts := testOptions()
	opts.Config.Fleet.Redis = r.URL
	opts.Config.Fleet.Node = name
	opts.Config.Fleet.Lease = 3 * time.Second
	opts.Config.Fleet.Timeout = time.Second
	return opts
}

// startNodes starts a server on each of opts, guarded once: a node's
// goroutines come and go (Redis connections) while the others start.
func startNodes(t *testing.T, opts ...server.Options) []*server.Server {
	t.Helper()
	guard(t)
	var out []*server.Server
	for _, o := range opts {
		out = append(out, startUnguarded(t, o))
	}
	return out
}

// TestFleetUserQuotaAcrossNodes: limits.user_allocations counts a user's
// allocations on every node; one ended frees a place on another node.
func TestFleetUserQuotaAcrossNodes(t *testing.T) {
	r := redistest.Start(t)
	optsA, optsB := fleetOptions(r, "a"), fleetOptions(r, "b")
	optsA.Config.Limits.UserAllocations, optsB.Config.Limits.UserAllocations = 2, 2
	obs := &fakeObserver{}
	optsB.Observer = obs
	nodes := startNodes(t, optsA, optsB)
	a, b := nodes[0], nodes[1]

	first, second := dial(t, a, "udp"), dial(t, b, "udp")
	first.MustAllocate()
	second.MustAllocate()
	third := dial(t, b, "udp")
	if code := testturn.ErrorCode(third.Allocate()); code != 486 {
		t.Fatalf("third allocation of the user: %d, want 486", code)
	}
	if got := obs.Rejected(); !slices.Equal(got, []string{server.RejectFleetQuota}) {
		t.Errorf("rejections %q", got)
	}
	if code := first.Refresh(0); code != 0 {
		t.Fatalf("release: %d", code)
	}
	// The release is written in the background: the next Allocate may
	// come first, and is then refused; a bounded number of tries.
	deadline := time.Now().Add(waitTimeout)
	for {
		again := dial(t, b, "udp")
		code := testturn.ErrorCode(again.Allocate())
		if code == 0 {
			break
		}
		if code != 486 || time.Now().After(deadline) {
			t.Fatalf("allocate after a release on another node: %d", code)
		}
		time.Sleep(20 * time.Millisecond) // the release's write
	}
	if st, ok := b.FleetStats(); !ok || !st.Up || st.Refused == 0 || st.Admitted < 2 {
		t.Errorf("b's fleet stats %+v, %v", st, ok)
	}
}

// TestFleetSessionsAndCredentials: every node's sessions with its name,
// and REST credentials that authenticate on a node they name.
func TestFleetSessionsAndCredentials(t *testing.T) {
	r := redistest.Start(t)
	optsA, optsB := fleetOptions(r, "a"), fleetOptions(r, "b")
	optsA.Config.Auth.Secrets = []string{"s3cret"}
	optsB.Config.Auth.Secrets = []string{"s3cret"}
	nodes := startNodes(t, optsA, optsB)
	a, b := nodes[0], nodes[1]
	dial(t, b, "udp").MustAllocate()

	deadline := time.Now().Add(waitTimeout)
	for {
		got, err := a.FleetSessions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 1 && got[0].Node == "b" && got[0].User == "demo" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a lists %+v, want b's one session", got)
		}
		time.Sleep(50 * time.Millisecond) // b publishes at its beat
	}
	creds, err := a.Credentials(context.Background(), "carol")
	if err != nil {
		t.Fatal(err)
	}
	if len(creds.URIs) == 0 || creds.TTL != 3600 {
		t.Fatalf("credentials %+v", creds)
	}
	c := dialAs(t, a, "udp", creds.Username, creds.Password)
	c.MustAllocate()
	if _, err := b.Credentials(context.Background(), ""); err == nil {
		t.Error("credentials for no user")
	}
}

// TestFleetCountsMoveWithAHandOver: a successor counts the allocations it
// took over under the node's name, and their end frees the places.
func TestFleetCountsMoveWithAHandOver(t *testing.T) {
	r := redistest.Start(t)
	optsA, optsB := fleetOptions(r, "a"), fleetOptions(r, "b")
	optsA.Config.Limits.UserAllocations, optsB.Config.Limits.UserAllocations = 2, 2
	nodes := startNodes(t, optsA, optsB)
	a, b := nodes[0], nodes[1]
	c1, c2 := dial(t, a, "udp"), dial(t, a, "udp")
	c1.MustAllocate()
	c2.MustAllocate()

	a2 := handOver(t, a, optsA)
	// Once the successor's client is open its counts are the fleet's.
	deadline := time.Now().Add(waitTimeout)
	for {
		if st, _ := a2.FleetStats(); st.Up && st.Held == 2 {
			break
		}
		if time.Now().After(deadline) {
			st, _ := a2.FleetStats()
			t.Fatalf("successor's fleet stats %+v, want 2 held", st)
		}
		time.Sleep(20 * time.Millisecond) // the client opens on its own goroutine
	}
	if code := testturn.ErrorCode(dial(t, b, "udp").Allocate()); code != 486 {
		t.Fatalf("a third allocation after the hand-over: %d, want 486", code)
	}
	if code := c1.Refresh(0); code != 0 {
		t.Fatalf("release through the successor: %d", code)
	}
	for {
		code := testturn.ErrorCode(dial(t, b, "udp").Allocate())
		if code == 0 {
			break
		}
		if time.Now().After(deadline.Add(waitTimeout)) {
			t.Fatalf("allocate after the successor's release: %d", code)
		}
		time.Sleep(20 * time.Millisecond) // the release's write
	}
}
