package gate

import (
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
)

// TestPendingBounded: entries pion never takes (refused requests) must not
// grow a hand-over table past maxPending.
func TestPendingBounded(t *testing.T) {
	tests := []struct {
		name string
		puts int
		keys int // distinct keys cycled through
	}{
		{"exactly full", maxPending, maxPending},
		{"one over", maxPending + 1, maxPending + 1},
		{"three times over", 3*maxPending + 7, 3*maxPending + 7},
		{"same key again and again", 3 * maxPending, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p pending[int, int]
			for i := range tc.puts {
				p.put(i%tc.keys, i)
				if n := p.size(); n > maxPending {
					t.Fatalf("after %d puts the table holds %d entries, bound is %d", i+1, n, maxPending)
				}
				if n := len(p.order) - p.head; n > maxPending {
					t.Fatalf("after %d puts %d slots are queued, bound is %d", i+1, n, maxPending)
				}
			}
			// The newest entry always survives.
			last := tc.puts - 1
			if v, ok := p.take(last % tc.keys); !ok || v != last {
				t.Errorf("take(newest) = (%d, %v), want (%d, true)", v, ok, last)
			}
			if _, ok := p.take(last % tc.keys); ok {
				t.Error("an entry was taken twice")
			}
		})
	}
}

// TestGateTablesBounded drives the bound through Inspect: DONT-FRAGMENT
// Allocates from more client ports than maxPending, none taken by pion.
func TestGateTablesBounded(t *testing.T) {
	const realm, user, pass = "turnd.test", "alice", "pw"
	key := auth.LongTermKey(user, realm, pass)
	g := New(&Policy{Keys: func(string, string) (string, [][]byte, error) { return user, [][]byte{key, key}, nil }, MultiKey: true}, Hooks{})
	m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest),
		stun.NewUsername(user), stun.NewRealm(realm), stun.NewNonce("n"),
		stun.RawAttribute{Type: stun.AttrDontFragment}, stun.MessageIntegrity(key))
	if err != nil {
		t.Fatal(err)
	}
	local := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}
	for port := 1; port <= maxPending+100; port++ {
		src := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
		if _, v := g.Inspect(m.Raw, src, local, nil); v != Rewrite {
			t.Fatalf("verdict %v, want Rewrite", v)
		}
	}
	if n := g.dontFragment.size(); n > maxPending || n == 0 {
		t.Errorf("DONT-FRAGMENT table holds %d entries, want 1..%d", n, maxPending)
	}
	if n := g.chosenKey.size(); n > maxPending || n == 0 {
		t.Errorf("key table holds %d entries, want 1..%d", n, maxPending)
	}
}

// TestPendingEvictsOldestAndExpired: a full table loses its oldest entry
// only, and an entry past pendingTTL is neither handed over nor kept.
func TestPendingEvictsOldestAndExpired(t *testing.T) {
	now := time.Unix(1000, 0)
	p := pending[int, int]{now: func() time.Time { return now }}
	for i := range maxPending + 1 {
		p.put(i, i)
	}
	if _, ok := p.take(0); ok {
		t.Error("the oldest entry of a full table survived one more put")
	}
	for _, k := range []int{1, maxPending / 2, maxPending} {
		if v, ok := p.take(k); !ok || v != k {
			t.Errorf("take(%d) = (%d, %v), want (%d, true)", k, v, ok, k)
		}
	}
	now = now.Add(pendingTTL)
	if _, ok := p.take(2); ok {
		t.Error("an entry past its TTL was handed over")
	}
	p.put(-1, -1)
	if n := p.size(); n != 1 {
		t.Errorf("after the TTL one put leaves %d entries, want 1 (expired ones swept)", n)
	}
	if n := len(p.order) - p.head; n != 1 {
		t.Errorf("%d slots queued, want 1", n)
	}
}

// TestFloodKeepsALiveEntry: a client whose requests pion refuses, so that
// their entries are never taken, floods the hand-over tables between
// another client's authenticated Allocate and pion's handling of it; that
// client's DONT-FRAGMENT and chosen key are still handed over.
func TestFloodKeepsALiveEntry(t *testing.T) {
	const realm, user, pass = "turnd.test", "alice", "pw"
	key := auth.LongTermKey(user, realm, pass)
	g := New(&Policy{Keys: func(string, string) (string, [][]byte, error) { return user, [][]byte{key, key}, nil }, MultiKey: true}, Hooks{})
	m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest),
		stun.NewUsername(user), stun.NewRealm(realm), stun.NewNonce("n"),
		stun.RawAttribute{Type: stun.AttrDontFragment}, stun.MessageIntegrity(key))
	if err != nil {
		t.Fatal(err)
	}
	local := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}
	flood := func(from, to int) {
		for port := from; port < to; port++ {
			src := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 66), Port: port}
			if _, v := g.Inspect(m.Raw, src, local, nil); v != Rewrite {
				t.Fatalf("verdict %v, want Rewrite", v)
			}
		}
	}
	flood(1, maxPending*3/4)
	live := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	if _, v := g.Inspect(m.Raw, live, local, nil); v != Rewrite {
		t.Fatalf("verdict %v, want Rewrite", v)
	}
	flood(maxPending*3/4, maxPending*3/2)
	if _, ok := g.TakeKey(live, user); !ok {
		t.Error("the live client's chosen key was dropped by the flood")
	}
	if !g.TakeDontFragment(live, local) {
		t.Error("the live client's DONT-FRAGMENT was dropped by the flood")
	}
	if n := g.dontFragment.size(); n > maxPending {
		t.Errorf("DONT-FRAGMENT table holds %d entries, bound is %d", n, maxPending)
	}
}
