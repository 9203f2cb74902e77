package turn_test

import (
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/allocation"
)

// TestConnectionBindTimerStartsAtSuccess: RFC 6062 §5.2 gives the client
// 30 seconds from the Connect success to send its ConnectionBind, however
// long the relay took to dial; and a dial that succeeds after the
// allocation ended is answered 447, its peer closed.
func TestConnectionBindTimerStartsAtSuccess(t *testing.T) {
	e := connectEnv(t)
	control, _ := tcpClient(1)
	e.tcpAllocate(t, control)
	call := e.connect(t, control, "192.0.2.1:80")
	e.clock.Advance(20 * time.Second) // a slow dial
	call.done(nil)
	sent(control)
	e.clock.Advance(allocation.ConnectionBindTimeout - time.Second)
	e.table.Expire(e.clock.Now())
	data, _ := tcpClient(2)
	if resp := e.do(t, data, e.build(t, methodConnectionBind, aliceUser(), connectionID(call.id))); !isCode(resp, 0) {
		code, reason := codeOf(resp)
		t.Fatalf("ConnectionBind 29 s after the success: %d %s", code, reason)
	}

	late := e.connect(t, control, "192.0.2.2:80")
	a, _ := e.table.Get(control.Tuple)
	e.table.End(a, allocation.EndConnectionClosed)
	peer := e.relays.peers[late.id]
	late.done(nil)
	if got := sent(control); len(got) != 1 || !isCode(got[0], 447) {
		t.Fatalf("a dial done after the allocation ended answered %d messages", len(got))
	}
	if !peer.closed {
		t.Error("the late peer connection was left open")
	}
}
