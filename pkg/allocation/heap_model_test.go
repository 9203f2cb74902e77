package allocation

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"
)

// TestExpireMatchesAModel drives one table through random permits, channel
// binds, refreshes and clock steps with short lifetimes, and checks after
// every Expire what a plain model of deadlines says: the permissions and
// bound channels live exactly while now is before their deadline, a
// channel's number stays taken through its cool-down, and the heap holds
// one item per live deadline, each at its recorded index.
func TestExpireMatchesAModel(t *testing.T) {
	const permLife, chanLife = 7 * time.Second, 11 * time.Second
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		_, hooks := newEvents()
		tab := New(Limits{PermissionLifetime: permLife, ChannelLifetime: chanLife}, Hooks{Unreserved: hooks.Unreserved})
		a := insert(t, tab, "a", tuple(1), v4(1), 1000*time.Hour)
		peers := make([]netip.AddrPort, 6)
		for i := range peers {
			peers[i] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i + 1)}), 9)
		}
		perm := map[netip.Addr]time.Time{}
		type ch struct {
			peer netip.AddrPort
			exp  time.Time
		}
		chans := map[uint16]ch{}
		now := t0
		for step := range 400 {
			p := peers[rng.IntN(len(peers))]
			switch rng.IntN(4) {
			case 0:
				if err := tab.Permit(a, []netip.Addr{p.Addr()}, now, 0); err != nil {
					t.Fatal(err)
				}
				perm[p.Addr()] = now.Add(permLife)
			case 1:
				n := uint16(0x4000 + rng.IntN(4))
				c, taken := chans[n]
				free := !taken || c.peer == p
				for m, o := range chans {
					if o.peer == p && m != n {
						free = false
					}
				}
				err := tab.BindChannel(a, n, p, now, 0, 0)
				if free != (err == nil) {
					t.Fatalf("seed %d step %d: bind %#x to %v: %v, model free %v", seed, step, n, p, err, free)
				}
				if err == nil {
					chans[n] = ch{p, now.Add(chanLife)}
					perm[p.Addr()] = now.Add(permLife)
				}
			default:
				now = now.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
			}
			tab.Expire(now)
			for ip, exp := range perm {
				if !now.Before(exp) {
					delete(perm, ip)
				}
			}
			for n, c := range chans {
				if !now.Before(c.exp.Add(ChannelCooldown)) {
					delete(chans, n)
				}
			}
			for _, q := range peers {
				exp, want := perm[q.Addr()]
				got, ok := a.Permission(q.Addr())
				if ok != want || (ok && !got.Equal(exp)) {
					t.Fatalf("seed %d step %d: permission of %v = %v %v, model %v %v", seed, step, q, got, ok, exp, want)
				}
			}
			for n := uint16(0x4000); n < 0x4004; n++ {
				c, known := chans[n]
				bound := known && now.Before(c.exp)
				peer, _, ok := a.Channel(n)
				if ok != bound || (ok && peer != c.peer) {
					t.Fatalf("seed %d step %d: channel %#x = %v %v, model %v bound %v", seed, step, n, peer, ok, c.peer, bound)
				}
			}
			tab.mu.Lock()
			want := 1 + len(a.perms) + len(a.chans) // the family, and each entry's one item
			for i, d := range tab.due {
				if int(d.index) != i {
					tab.mu.Unlock()
					t.Fatalf("seed %d step %d: item %d records index %d", seed, step, i, d.index)
				}
			}
			got := len(tab.due)
			tab.mu.Unlock()
			if got != want {
				t.Fatalf("seed %d step %d: %d heap items for %d deadlines", seed, step, got, want)
			}
		}
	}
}
