package e2e

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// TestBrowserStaleNonce: Chromium answered 438 Stale Nonce to its first
// CreatePermission, ChannelBind and periodic Refresh signs each again with
// the nonce of the 438 and keeps its call. The 438s are turnd's own: a
// nonceAlias proxy has Chromium hold a nonce turnd never issued and lets
// those requests reach turnd with it, signed; turnd must refuse them as
// stale with a nonce of its own (RFC 8489 §9.2.4), which differs from
// Chromium's, so the test sees which one Chromium signs with next. A
// six-second lifetime makes Chromium refresh every three seconds.
func TestBrowserStaleNonce(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.MaxLifetime = 6 * time.Second
	srv := start(t, cfg)
	staled := map[string]bool{} // by client and method
	alias := newNonceAlias("demo", "demo", func(q request) bool {
		k := q.client + " " + q.typ.Method.String()
		switch q.typ.Method {
		case stun.MethodCreatePermission, stun.MethodChannelBind, stun.MethodRefresh:
			if !staled[k] && !q.release {
				staled[k] = true
				return true
			}
		}
		return false
	})
	proxy := newTurnProxy(t, net.IPv4(127, 0, 0, 1), srv.UDP, alias)
	b := newBrowser(t, "")

	b.startCall(demoServer(fmt.Sprintf("turn:%s?transport=udp", proxy.Addr())))
	if r := b.burst(burstMessages, burstGap); r.Echoed != r.Sent {
		t.Errorf("after CreatePermission and ChannelBind got 438: %d of %d messages echoed, want every one", r.Echoed, r.Sent)
	}
	proxy.await(t, "both allocations refreshed after a 438", func(reqs []request) bool {
		return len(retried(proxy, reqs, stun.MethodRefresh)) == 2
	})
	if r := b.burst(burstMessages, burstGap); r.Echoed != r.Sent {
		t.Errorf("after Refresh got 438: %d of %d messages echoed, want every one", r.Echoed, r.Sent)
	}
	reqs := proxy.Requests()
	for _, m := range []stun.Method{stun.MethodCreatePermission, stun.MethodChannelBind} {
		if got := retried(proxy, reqs, m); len(got) != 2 {
			t.Errorf("%v: %d clients signed again with the 438's nonce and were granted, want both (%v)", m, len(got), got)
		}
	}

	var ok bool
	b.eval("hangUp()", &ok)
	srv.waitLogCount("allocation deleted", 2, readDeadline)
	if n := len(srv.usageRecords("udp", "released")); n != 2 {
		t.Errorf("%d allocations released, want the call's 2", n)
	}
}

// retried returns the clients whose stale request of method turnd answered
// 438 with a nonce of its own, and whose next request of that method was
// signed with that nonce and granted.
func retried(p *turnProxy, reqs []request, method stun.Method) []string {
	var clients []string
	for i, q := range reqs {
		a, ok := p.Answer(q)
		if !q.stale || q.typ.Method != method || !ok || a.code != stun.CodeStaleNonce || a.nonce == "" {
			continue
		}
		for _, next := range reqs[i+1:] {
			if next.client != q.client || next.typ != q.typ {
				continue
			}
			if granted, ok := p.Answer(next); ok && next.nonce == a.shown && granted.typ.Class == stun.ClassSuccessResponse {
				clients = append(clients, q.client)
			}
			break
		}
	}
	return clients
}
