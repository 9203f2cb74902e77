package turn_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/bindings"
)

// carolUser is a second static user, who must not touch alice's allocation.
func carolUser() user { return user{"carol", auth.LongTermKey("carol", realm, "carol-password")} }

// TestRefresh: RFC 8656 §8.2 on a real table — the lifetime granted (and
// the table's deadline), deletion with 0, the family checks, and §5's 437
// and 441.
func TestRefresh(t *testing.T) {
	for _, tc := range []struct {
		name     string
		alloc    bool
		signer   user
		attrs    []stun.Setter
		code     int
		lifetime time.Duration
	}{
		{name: "no allocation: 437", signer: aliceUser(), attrs: []stun.Setter{lifetime(time.Minute)}, code: 437},
		{name: "another user: 441", alloc: true, signer: carolUser(), attrs: []stun.Setter{lifetime(time.Minute)}, code: 441},
		{name: "as asked", alloc: true, signer: aliceUser(), attrs: []stun.Setter{lifetime(20 * time.Minute)}, lifetime: 20 * time.Minute},
		{name: "no LIFETIME: the default", alloc: true, signer: aliceUser(), lifetime: 10 * time.Minute},
		{name: "below the default: the default", alloc: true, signer: aliceUser(), attrs: []stun.Setter{lifetime(30 * time.Second)}, lifetime: 10 * time.Minute},
		{name: "exactly the maximum: granted exactly", alloc: true, signer: aliceUser(), attrs: []stun.Setter{lifetime(time.Hour)}, lifetime: time.Hour},
		{name: "above the maximum: the maximum", alloc: true, signer: aliceUser(), attrs: []stun.Setter{lifetime(2 * time.Hour)}, lifetime: time.Hour},
		{name: "REQUESTED-ADDRESS-FAMILY the allocation lacks: 443", alloc: true, signer: aliceUser(),
			attrs: []stun.Setter{rawAttr(stun.AttrRequestedAddressFamily, 2, 0, 0, 0)}, code: 443},
		{name: "REQUESTED-ADDRESS-FAMILY it has", alloc: true, signer: aliceUser(),
			attrs: []stun.Setter{lifetime(20 * time.Minute), rawAttr(stun.AttrRequestedAddressFamily, 1, 0, 0, 0)}, lifetime: 20 * time.Minute},
		{name: "malformed REQUESTED-ADDRESS-FAMILY: 400", alloc: true, signer: aliceUser(),
			attrs: []stun.Setter{rawAttr(stun.AttrRequestedAddressFamily, 1)}, code: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c, _ := udpClient(1)
			if tc.alloc {
				e.allocate(t, c)
			}
			e.clock.Advance(time.Minute)
			resp := e.do(t, c, e.build(t, stun.MethodRefresh, tc.signer, tc.attrs...))
			if code, _ := codeOf(resp); code != tc.code {
				t.Fatalf("answered %d, want %d", code, tc.code)
			}
			if !signedWith(resp, tc.signer.key) {
				t.Error("not signed with the requester's key")
			}
			if tc.code != 0 {
				return
			}
			a, _ := e.table.Get(c.Tuple)
			if got := lifetimeOf(t, resp); got != tc.lifetime || a.Expires(bindings.V4) != e.clock.Now().Add(tc.lifetime) {
				t.Errorf("LIFETIME %v, expires %v; want %v from now", got, a.Expires(bindings.V4), tc.lifetime)
			}
		})
	}

	t.Run("LIFETIME 0 deletes", func(t *testing.T) {
		e := newEnv(t)
		c, _ := udpClient(1)
		e.allocate(t, c)
		resp := e.do(t, c, e.build(t, stun.MethodRefresh, aliceUser(), lifetime(0)))
		if code, _ := codeOf(resp); code != 0 || lifetimeOf(t, resp) != 0 {
			t.Fatalf("answered %d, LIFETIME %v", code, lifetimeOf(t, resp))
		}
		if _, ok := e.table.Get(c.Tuple); ok || !slices.Equal(e.events.endings(), []string{"alice released"}) ||
			!slices.Equal(e.relays.closed, []string{"50000 3"}) {
			t.Errorf("still in the table %v, endings %q, relay closed %q", ok, e.events.endings(), e.relays.closed)
		}
		if again := e.do(t, c, e.build(t, stun.MethodRefresh, aliceUser(), lifetime(time.Minute))); !isCode(again, 437) {
			t.Error("a Refresh after the deletion is not 437")
		}
	})
}
