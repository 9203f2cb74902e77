package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/server"
	"github.com/turnd/turnd/pkg/turn"
)

// heldRelays is a turn.Relays whose Open waits until the test lets it go:
// an Allocate admitted by the table and not yet inserted.
type heldRelays struct {
	turn.Relays
	entered, release chan struct{}
}

func (r heldRelays) Open(route *bindings.Route, w bindings.Want) (bindings.Relayed, error) {
	r.entered <- struct{}{}
	<-r.release
	return r.Relays.Open(route, w)
}

// TestDrainCountsAnAdmittedAllocate: an Allocate the table admitted while
// its relay is still being opened is counted by a drain that begins then
// (refusal and count are one step): the drain starts with 1, the 200
// arrives, and the drain waits for the allocation's end instead of
// closing the server under a granted allocation.
func TestDrainCountsAnAdmittedAllocate(t *testing.T) {
	hold := heldRelays{entered: make(chan struct{}, 1), release: make(chan struct{})}
	opts := testOptions()
	server.WrapRelays(&opts, func(r turn.Relays) turn.Relays { hold.Relays = r; return hold })
	s := start(t, opts)
	c := dial(t, s, "udp")
	answered := make(chan int, 1)
	go func() { answered <- testturn.ErrorCode(c.Allocate()) }()
	select {
	case <-hold.entered:
	case <-time.After(waitTimeout):
		close(hold.release)
		t.Fatal("the Allocate never reached the relay")
	}

	statuses := make(chan drain.Status, 16)
	m := drain.New(drain.Config{Timeout: time.Minute, Allocations: s.Table(),
		OnChange: func(st drain.Status) { statuses <- st }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan drain.Signal, 1)
	done := make(chan drain.Result, 1)
	go func() { done <- m.Run(ctx, signals) }()
	signals <- drain.Terminate
	select {
	case st := <-statuses:
		if st.Phase != drain.Draining || st.Accepting || st.Allocations != 1 {
			close(hold.release)
			t.Fatalf("drain began with %+v, want draining, refusing, 1 allocation (the admitted Allocate)", st)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the drain did not begin")
	}
	close(hold.release)
	select {
	case code := <-answered:
		if code != 0 {
			t.Fatalf("the admitted Allocate was answered %d, want its success", code)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the admitted Allocate was never answered")
	}
	if code := testturn.ErrorCode(dial(t, s, "udp").Allocate()); code != 486 {
		t.Errorf("an Allocate after the drain began: %d, want 486", code)
	}
	select {
	case r := <-done:
		t.Fatalf("the drain ended (%v) while the admitted allocation lives", r.Reason)
	default:
	}
	if code := c.Refresh(0); code != 0 {
		t.Fatalf("Refresh(0): %d", code)
	}
	select {
	case r := <-done:
		if r.Reason != drain.Drained || r.AtStart != 1 {
			t.Errorf("drain result %+v, want drained with 1 allocation at its start", r)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the drain did not end once the allocation was released")
	}
}
