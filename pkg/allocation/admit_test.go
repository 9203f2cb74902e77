package allocation

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAdmitAndStopAdmittingAreOneStep: with many goroutines admitting
// while the drain stops admission, every ticket obtained is in the count
// StopAdmitting returned, and every Admit after it is refused: no
// admitted Allocate escapes the drain's count.
func TestAdmitAndStopAdmittingAreOneStep(t *testing.T) {
	for round := range 50 {
		tab := New(Limits{}, Hooks{})
		var (
			wg      sync.WaitGroup
			granted atomic.Int64
			stopped = make(chan int, 1)
			start   = make(chan struct{})
		)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := range 200 {
					k, err := tab.Admit("u", netip.AddrFrom4([4]byte{10, byte(g), byte(i >> 8), byte(i)}), UDP)
					if errors.Is(err, ErrNotAdmitting) {
						return
					}
					if err != nil {
						t.Errorf("admit: %v", err)
						return
					}
					granted.Add(1)
					if i%2 == 0 { // half of them become live allocations
						tp := tuple(uint16(g*1000 + i))
						a := &Allocation{Tuple: tp, User: "u"}
						if err := k.Insert(a, v4(uint16(g*1000+i)), time.Minute, t0); err != nil {
							t.Errorf("insert: %v", err)
						}
					}
				}
			}()
		}
		close(start)
		go func() { stopped <- tab.StopAdmitting() }()
		live := <-stopped
		wg.Wait()
		if got := int(granted.Load()); got != live {
			t.Fatalf("round %d: %d tickets granted, StopAdmitting counted %d", round, got, live)
		}
		if tab.Admitting() {
			t.Fatal("still admitting after StopAdmitting")
		}
		if _, err := tab.Admit("u", lo, UDP); !errors.Is(err, ErrNotAdmitting) {
			t.Fatalf("admit after StopAdmitting: %v", err)
		}
	}
}

// TestTicketCancelFreesTheQuota: an outstanding ticket holds its place in
// every quota (so concurrent Allocates cannot overshoot), and Cancel gives
// it back once.
func TestTicketCancelFreesTheQuota(t *testing.T) {
	tab := New(Limits{Total: 2, PerUser: 1, PerIP: 1}, Hooks{})
	k, err := tab.Admit("alice", lo, UDP)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Count() != 1 {
		t.Fatalf("count %d with one ticket out, want 1", tab.Count())
	}
	if _, err := tab.Admit("alice", netip.MustParseAddr("192.0.2.99"), UDP); !errors.Is(err, ErrUserQuota) {
		t.Fatalf("second ticket of alice: %v, want ErrUserQuota", err)
	}
	if _, err := tab.Admit("bob", lo, UDP); !errors.Is(err, ErrIPQuota) {
		t.Fatalf("second ticket from one address: %v, want ErrIPQuota", err)
	}
	k2, err := tab.Admit("bob", netip.MustParseAddr("192.0.2.99"), UDP)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Admit("carol", netip.MustParseAddr("192.0.2.98"), UDP); !errors.Is(err, ErrTotalQuota) {
		t.Fatalf("third ticket: %v, want ErrTotalQuota", err)
	}
	k.Cancel()
	k.Cancel() // a second cancel gives back nothing more
	if tab.Count() != 1 || tab.UserCount("alice") != 0 {
		t.Fatalf("count %d, alice %d after cancel; want 1, 0", tab.Count(), tab.UserCount("alice"))
	}
	if err := k.Insert(&Allocation{Tuple: tuple(1), User: "alice"}, v4(1), time.Minute, t0); !errors.Is(err, ErrTicketUsed) {
		t.Fatalf("insert on a cancelled ticket: %v, want ErrTicketUsed", err)
	}
	k3, err := tab.Admit("alice", lo, UDP)
	if err != nil {
		t.Fatalf("alice refused after her ticket was cancelled: %v", err)
	}
	k3.Cancel()
	if err := k2.Insert(&Allocation{Tuple: tuple(2), User: "bob"}, v4(2), time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	k2.Cancel() // a used ticket's cancel is a no-op
	if tab.Count() != 1 || tab.UserCount("bob") != 1 {
		t.Fatalf("count %d, bob %d after insert and a late cancel; want 1, 1", tab.Count(), tab.UserCount("bob"))
	}
}
