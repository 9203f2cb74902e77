package e2e

import (
	"context"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// TestFleetRevokeDisconnectsOnOtherNodes: with auth.disconnect_on_revoke, a
// user revoked on node a by a SIGHUP reload loses its live allocations on b
// and c (gone from their /sessions), and each ended allocation is one
// entry of the usage stream, named by its own node, its bytes those its
// client sent and received.
func TestFleetRevokeDisconnectsOnOtherNodes(t *testing.T) {
	f := newFleet(t)
	var nodes []*turnd
	for _, name := range []string{"a", "b", "c"} {
		cfg := f.config(name)
		cfg.Auth.DisconnectOnRevoke = true
		nodes = append(nodes, start(t, cfg))
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	peer := echoPeer(t)
	clients := map[string]*testturn.Client{}
	sent := map[string]int{}
	for name, p := range map[string]*turnd{"b": b, "c": c} {
		cl := testturn.Dial(t, "udp", p.UDP, "mallory", "m")
		cl.MustAllocate()
		if code := cl.Permit(peer); code != 0 {
			t.Fatalf("permission on %s: %d", name, code)
		}
		clients[name] = cl
		sent[name] = echoOnce(t, cl, peer, "payload for "+name)
	}

	cfg := f.config("a")
	cfg.Auth.DisconnectOnRevoke = true
	cfg.Auth.RevokedUsers = []string{"mallory"}
	rewriteConfig(t, a.cfg, cfg)
	a.signal(syscall.SIGHUP)
	a.waitLog("reloaded", 5*time.Second)
	for name, p := range map[string]*turnd{"b": b, "c": c} {
		if rec := p.waitLog("allocation deleted", 5*time.Second); rec["user"] != "mallory" {
			t.Fatalf("%s's usage record %v, want mallory's", name, rec)
		}
		if code, body := f.do(p, http.MethodGet, "/sessions"); code != http.StatusOK || strings.Contains(body, "mallory") {
			t.Errorf("%s's sessions after mallory was revoked on a: %d %s", name, code, body)
		}
		// A revoked user's Refresh fails authentication before the lookup.
		if code := clients[name].Refresh(time.Minute); code != 401 {
			t.Errorf("Refresh on %s after mallory was revoked on a: %d, want 401", name, code)
		}
		if code := allocateCode(t, p, "mallory", "m"); code != 401 {
			t.Errorf("%s: mallory's new Allocate %d, want 401", name, code)
		}
	}

	byNode := map[string]int{}
	eventually(t, 5*time.Second, "one usage entry per node's ended allocation", func() bool {
		entries, err := f.redis.Admin().XRange(context.Background(), "turnd:usage", "-", "+").Result()
		if err != nil || len(entries) < 2 {
			return false
		}
		clear(byNode)
		for _, e := range entries {
			node, _ := e.Values["node"].(string)
			to, from := fieldInt(t, e.Values["to_peer_bytes"]), fieldInt(t, e.Values["from_peer_bytes"])
			if e.Values["user"] != "mallory" || to != sent[node] || from != sent[node] {
				t.Fatalf("usage entry %v; the client on %s sent and received %d bytes", e.Values, node, sent[node])
			}
			byNode[node]++
		}
		return len(entries) == 2
	})
	if byNode["b"] != 1 || byNode["c"] != 1 {
		t.Fatalf("usage entries by node %v, want one each from b and c", byNode)
	}
}

// echoOnce sends data to the echo peer once and waits for the one Data
// indication that brings it back; it returns the payload's length, the
// bytes the client sent (and received).
func echoOnce(t *testing.T, c *testturn.Client, peer *net.UDPAddr, data string) int {
	t.Helper()
	c.Send(peer, []byte(data))
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		frame, err := c.ReadFrame(time.Until(deadline))
		if err != nil {
			break
		}
		m := &stun.Message{Raw: frame}
		if m.Decode() != nil || m.Type != stun.NewType(stun.MethodData, stun.ClassIndication) {
			continue
		}
		if v, err := m.Get(stun.AttrData); err == nil && string(v) == data {
			return len(data)
		}
	}
	t.Fatalf("%q did not come back from the peer", data)
	return 0
}
