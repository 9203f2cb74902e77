package turn_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/turn"
)

// admission is a fake turn.Admission: each Admit waits for an answer on
// answers, and every call is logged in order.
type admission struct {
	mu      sync.Mutex
	log     []string
	asked   chan string
	answers chan error
	busy    error // what Busy answers
}

func newAdmission() *admission {
	return &admission{asked: make(chan string, 512), answers: make(chan error)}
}

func (a *admission) Admit(_ context.Context, user string) error {
	a.note("admit " + user)
	a.asked <- user
	err := <-a.answers
	if err == nil {
		a.note("counted " + user)
	}
	return err
}
func (a *admission) Hold(user string) { a.note("hold " + user) }
func (a *admission) Busy(user string) error {
	a.note("busy " + user)
	return a.busy
}
func (a *admission) Release(user string) { a.note("release " + user) }

func (a *admission) note(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = append(a.log, s)
}

func (a *admission) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.log)
}

// await returns the lane's one answer once it is written.
func await(t *testing.T, l *lane) *stun.Message {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		if got := l.take(); len(got) > 0 {
			if len(got) != 1 {
				t.Fatalf("%d answers, want 1", len(got))
			}
			m := &stun.Message{Raw: got[0]}
			if err := m.Decode(); err != nil {
				t.Fatal(err)
			}
			return m
		}
		select {
		case <-l.wrote: // written by the admission's goroutine
		case <-timeout:
			t.Fatal("no answer")
		}
	}
}

func newAdmissionEnv(t *testing.T) (*env, *admission) {
	adm := newAdmission()
	e := newEnvWith(t, func(o *turn.Options) { o.Admission = adm })
	return e, adm
}

// TestAdmissionAnswersOffTheReader: Serve returns before the Admission
// answers (the reader relays others meanwhile), a retransmission asks
// nothing more, and the one answer is the allocation's success.
func TestAdmissionAnswersOffTheReader(t *testing.T) {
	e, adm := newAdmissionEnv(t)
	c, l := udpClient(1)
	req := e.build(t, stun.MethodAllocate, aliceUser(), transportUDP())
	e.h.Serve(req, c)
	if got := <-adm.asked; got != alice {
		t.Fatalf("asked about %q", got)
	}
	e.h.Serve(req, c) // a retransmission while the first waits
	if got := l.take(); len(got) != 0 {
		t.Fatalf("answered %d times before the admission did", len(got))
	}
	adm.answers <- nil
	if code, reason := codeOf(await(t, l)); code != 0 {
		t.Fatalf("answer %d %s, want a success", code, reason)
	}
	if e.table.Count() != 1 {
		t.Fatalf("table holds %d", e.table.Count())
	}
	if got := adm.calls(); !slices.Equal(got, []string{"admit alice", "counted alice"}) {
		t.Errorf("calls %q", got)
	}
	// Its end gives the count back.
	a, _ := e.table.Get(c.Tuple)
	e.table.End(a, allocation.EndReleased)
	if got := adm.calls(); got[len(got)-1] != "release alice" {
		t.Errorf("calls %q, want a release at the end", got)
	}
}

// TestAdmissionRefusal: a refusal is 486 with its reason, and the table's
// booking is given back.
func TestAdmissionRefusal(t *testing.T) {
	for _, tc := range []struct {
		err    error
		reason string
	}{
		{fmt.Errorf("fleet: %w", turn.ErrAdmissionQuota), turn.RefusedFleetQuota},
		{fmt.Errorf("fleet: %w", turn.ErrAdmissionUnavailable), turn.RefusedFleetUnavailable},
	} {
		e, adm := newAdmissionEnv(t)
		c, l := udpClient(1)
		e.h.Serve(e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()), c)
		<-adm.asked
		adm.answers <- tc.err
		if code, _ := codeOf(await(t, l)); code != 486 {
			t.Errorf("%v: answer %d, want 486", tc.err, code)
		}
		if n := e.table.Count(); n != 0 || e.table.UserCount(alice) != 0 {
			t.Errorf("%v: table counts %d (alice %d) after the refusal", tc.err, n, e.table.UserCount(alice))
		}
		if got := e.events.refusals(); !slices.Contains(got, "Allocate "+tc.reason+" "+alice) {
			t.Errorf("%v: refusals %q", tc.err, got)
		}
	}
}

// TestAdmissionReleasedWhenNotMade: admitted, but the relay has no port:
// 508, and the count goes back.
func TestAdmissionReleasedWhenNotMade(t *testing.T) {
	e, adm := newAdmissionEnv(t)
	e.relays.fail = bindings.ErrNoPort
	c, l := udpClient(1)
	e.h.Serve(e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()), c)
	<-adm.asked
	adm.answers <- nil
	if code, _ := codeOf(await(t, l)); code != 508 {
		t.Fatalf("answer %d, want 508", code)
	}
	if got := adm.calls(); !slices.Equal(got, []string{"admit alice", "counted alice", "release alice"}) {
		t.Errorf("calls %q", got)
	}
}

// TestPauseAdmissions waits for the Allocate asking, then counts new ones
// with Hold and answers them at once; resumed, it asks again.
func TestPauseAdmissions(t *testing.T) {
	e, adm := newAdmissionEnv(t)
	c1, l1 := udpClient(1)
	e.h.Serve(e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()), c1)
	<-adm.asked
	paused := make(chan error)
	go func() { paused <- e.h.PauseAdmissions(context.Background()) }()
	select {
	case err := <-paused:
		t.Fatalf("paused (%v) while an Allocate was asking", err)
	case <-time.After(20 * time.Millisecond): // a pause that does not wait returns within this
	}
	adm.answers <- nil
	if err := <-paused; err != nil {
		t.Fatal(err)
	}
	await(t, l1)
	c2, _ := udpClient(2)
	if code, _ := codeOf(e.do(t, c2, e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))); code != 0 {
		t.Fatalf("paused Allocate answered %d", code)
	}
	if got := adm.calls(); got[len(got)-1] != "hold alice" {
		t.Errorf("calls %q, want a hold while paused", got)
	}
	e.h.ResumeAdmissions()
	c3, _ := udpClient(3)
	e.h.Serve(e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()), c3)
	<-adm.asked
	adm.answers <- errors.New("no") // neither sentinel: a quota refusal
}

// TestPauseAdmissionsDeadline: a pause whose ctx ends first says so.
func TestPauseAdmissionsDeadline(t *testing.T) {
	e, adm := newAdmissionEnv(t)
	c, _ := udpClient(1)
	e.h.Serve(e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()), c)
	<-adm.asked
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.h.PauseAdmissions(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("PauseAdmissions = %v, want the ctx's error", err)
	}
	adm.answers <- nil
}

// TestAdmissionBusy: past the Allocates that may wait at once, the
// Admission decides without asking (a refusal here), and the waiting ones
// are answered as usual.
func TestAdmissionBusy(t *testing.T) {
	e, adm := newAdmissionEnv(t)
	adm.busy = fmt.Errorf("busy: %w", turn.ErrAdmissionUnavailable)
	var lanes []*lane
	for i := range 256 {
		c, l := udpClient(1)
		c.Tuple.Client = netip.AddrPortFrom(c.Tuple.Client.Addr(), uint16(20000+i))
		e.h.Serve(e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()), c)
		<-adm.asked
		lanes = append(lanes, l)
	}
	c, l := udpClient(2)
	e.h.Serve(e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()), c)
	if code, _ := codeOf(await(t, l)); code != 486 {
		t.Errorf("the Allocate past the limit: %d, want 486", code)
	}
	if got := e.events.refusals(); !slices.Contains(got, "Allocate "+turn.RefusedFleetUnavailable+" "+alice) {
		t.Errorf("refusals %q", got)
	}
	for range lanes {
		adm.answers <- nil
	}
	for _, l := range lanes {
		if code, _ := codeOf(await(t, l)); code != 0 {
			t.Fatalf("a waiting Allocate answered %d", code)
		}
	}
}
