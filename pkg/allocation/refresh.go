package allocation

import (
	"time"

	"github.com/turnd/turnd/internal/bindings"
)

// Refresh sets the lifetime of a's families f (0: every family it has)
// to lifetime from now, as granted by a Refresh (RFC 8656 §8.2), and
// returns it. A lifetime of 0 deletes those families at once: the
// allocation ends (EndReleased) when it has none left, and a dual-stack
// one that keeps the other calls Hooks.FamilyEnded. A family a has no
// relayed address of is ErrFamilyMismatch (443), changing nothing.
func (t *Table) Refresh(a *Allocation, f bindings.Families, lifetime time.Duration, now time.Time) (time.Duration, error) {
	var after []func()
	t.mu.Lock()
	granted, err := t.refresh(a, f, lifetime, now, &after)
	t.mu.Unlock()
	run(after)
	return granted, err
}

func (t *Table) refresh(a *Allocation, f bindings.Families, lifetime time.Duration, now time.Time, after *[]func()) (time.Duration, error) {
	if a.ending != 0 || a.t != t {
		return 0, ErrGone
	}
	have := a.families()
	if f == 0 {
		f = have
	}
	if !have.Has(f) {
		return 0, ErrFamilyMismatch
	}
	if lifetime <= 0 {
		if f == have {
			t.end(a, EndReleased, after)
			return 0, nil
		}
		t.dropFamily(a, f, after)
		return 0, nil
	}
	for _, one := range []bindings.Families{bindings.V4, bindings.V6} {
		if !f.Has(one) {
			continue
		}
		r := &a.relayed[one.Index()]
		r.expires = now.Add(lifetime)
		t.schedule(&r.item, r.expires, due{kind: dueFamily, a: a, n: uint32(one.Index())})
	}
	return lifetime, nil
}

// dropFamily deletes one family (V4 or V6) of a, which keeps the other:
// its relayed address is forgotten, and the permissions and channels of
// its peers go with it (they could no longer be relayed); t.mu is held.
func (t *Table) dropFamily(a *Allocation, f bindings.Families, after *[]func()) {
	r := &a.relayed[f.Index()]
	addr := r.addr
	delete(t.byRelay, addr)
	t.unschedule(&r.item)
	*r = relayAddr{}
	for p, e := range a.perms {
		if bindings.Of(p) == f {
			t.unschedule(&e.item)
			delete(a.perms, p)
		}
	}
	for n, c := range a.chans {
		if bindings.Of(c.peer.Addr()) == f {
			t.unschedule(&c.item)
			delete(a.chans, n)
		}
	}
	a.publishPermissions()
	a.publishChannels()
	if h := t.hooks.FamilyEnded; h != nil {
		*after = append(*after, func() { h(a, f, addr) })
	}
}
