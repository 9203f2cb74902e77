package turn_test

import (
	"testing"

	"github.com/pion/stun/v4"
)

// BenchmarkAllocate measures the control plane's share of an allocation,
// apart from sockets: an Allocate (decode, nonce, key, HMAC, admission,
// insert, signed answer) and the Refresh(0) that releases it, on a real
// table and the fake relay.
func BenchmarkAllocate(b *testing.B) {
	e := newEnv(b)
	c, l := udpClient(1)
	alloc := e.build(b, stun.MethodAllocate, aliceUser(), transportUDP())
	release := e.build(b, stun.MethodRefresh, aliceUser(), lifetime(0))
	b.ReportAllocs()
	for b.Loop() {
		e.h.Serve(alloc, c)
		e.h.Serve(release, c)
		if got := l.take(); len(got) != 2 {
			b.Fatalf("%d answers", len(got))
		}
		e.relays.opened, e.relays.closed = e.relays.opened[:0], e.relays.closed[:0]
	}
	if e.table.Count() != 0 {
		b.Fatalf("table holds %d", e.table.Count())
	}
}
