package server_test

import (
	"sync/atomic"
	"testing"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/allocation"
)

// panickyObserver panics in the observer calls made from turnd's callbacks
// on pion's goroutines, standing in for a bug there.
type panickyObserver struct {
	fakeObserver
	recovered atomic.Int32
}

func (o *panickyObserver) AllocationCreated(allocation.Transport) { panic("injected: created") }
func (o *panickyObserver) AllocationRejected(reason string)       { panic("injected: rejected " + reason) }
func (o *panickyObserver) PanicRecovered()                        { o.recovered.Add(1) }

// TestCallbackPanicsAreRecovered: a panic in the allocation-created event,
// the auth event, the quota handler and the relay address generator is
// counted, costs at most that one request, and the server keeps serving.
func TestCallbackPanicsAreRecovered(t *testing.T) {
	opts := testOptions()
	obs := &panickyObserver{}
	opts.Observer = obs
	port := testturn.FreePort(t)
	opts.Config.Relay.MinPort, opts.Config.Relay.MaxPort = port, port // one relay port
	opts.Config.Limits.UserAllocations = 1
	opts.Config.Auth.Users["other"] = "other"
	s := start(t, opts)
	peer := echoPeer(t)
	want := int32(0)
	step := func(what string) {
		t.Helper()
		want++
		if got := obs.recovered.Load(); got != want {
			t.Fatalf("after %s: %d panics recovered, want %d", what, got, want)
		}
	}

	c := dial(t, s, "udp")
	c.MustAllocate() // OnAllocationCreated panics after the allocation is booked
	step("OnAllocationCreated")
	if code := c.Permit(peer); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	if !c.Echo(peer, "after a panic") {
		t.Fatal("the allocation does not relay after a recovered panic")
	}

	if code := testturn.ErrorCode(dialAs(t, s, "udp", "demo", "wrong").Allocate()); code != 401 {
		t.Fatalf("wrong password: %d, want 401", code)
	}
	step("OnAuth")

	if code := testturn.ErrorCode(dial(t, s, "udp").Allocate()); code != 486 {
		t.Fatalf("over the user quota: %d, want 486", code)
	}
	step("the quota handler")

	if code := testturn.ErrorCode(dialAs(t, s, "udp", "other", "other").Allocate()); code != 508 {
		t.Fatalf("no relay port left: %d, want 508", code)
	}
	step("the relay address generator")

	if !c.Echo(peer, "still relaying") {
		t.Fatal("the first allocation stopped relaying")
	}
}
