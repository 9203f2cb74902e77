package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/config"
)

// TestFleetUsageStream: the fleet's usage stream holds one entry per ended
// allocation, its bytes those uclient counted.
func TestFleetUsageStream(t *testing.T) {
	f := newFleet(t)
	cfg := f.config("b")
	cfg.Limits.UserAllocations = 16 // uclient takes two per client
	b := start(t, cfg)
	peer := startPeer(t)
	const m, n, size = 2, 30, 100
	r := uclient(t, uclientTimeout, b.UDP, "-u", "demo", "-w", "demo", "-e", "127.0.0.1", "-r", itoa(peer),
		"-X", "-m", itoa(m), "-n", itoa(n), "-l", itoa(size))
	requireZeroLoss(t, r, m*n)
	match := reBytes.FindAllStringSubmatch(r.out, -1)
	if match == nil {
		t.Fatalf("no byte totals in uclient's output:\n%s", tail(r.out))
	}
	sent, recv := match[len(match)-1][1], match[len(match)-1][2]
	admin := f.redis.Admin()
	var toPeer, fromPeer int
	eventually(t, 10*time.Second, "one usage entry per uclient allocation", func() bool {
		entries, err := admin.XRange(context.Background(), "turnd:usage", "-", "+").Result()
		if err != nil || len(entries) < m {
			return false
		}
		toPeer, fromPeer = 0, 0
		for _, e := range entries {
			if e.Values["node"] != "b" || e.Values["user"] != "demo" || e.Values["allocation"] == "" {
				t.Fatalf("usage entry %v", e.Values)
			}
			toPeer += fieldInt(t, e.Values["to_peer_bytes"])
			fromPeer += fieldInt(t, e.Values["from_peer_bytes"])
		}
		return len(entries) == m
	})
	if itoa(toPeer) != sent || itoa(fromPeer) != recv {
		t.Fatalf("stream: %d bytes to peers, %d from; uclient sent %s, received %s", toPeer, fromPeer, sent, recv)
	}
}

// TestFleetCredentialsWithUclient: /credentials hands out REST credentials
// that turnutils_uclient relays with, on the nodes the answer names.
func TestFleetCredentialsWithUclient(t *testing.T) {
	f := newFleet(t)
	cfg := f.config("a")
	cfg.Limits.UserAllocations = 16 // uclient takes two per client
	a := start(t, cfg)
	if code, _ := a.get("/credentials?user=carol"); code != http.StatusUnauthorized {
		t.Fatalf("/credentials without the token: %d, want 401", code)
	}
	code, body := f.do(a, http.MethodGet, "/credentials?user=carol")
	if code != http.StatusOK {
		t.Fatalf("/credentials: %d %s", code, body)
	}
	creds := decodeCredentials(t, body)
	if len(creds.URIs) == 0 || !strings.HasSuffix(creds.Username, ":carol") || creds.TTL != 3600 {
		t.Fatalf("credentials %+v", creds)
	}
	u, err := config.ParseTURNURI(creds.URIs[0])
	if err != nil || u.Transport != "udp" {
		t.Fatalf("first URI %q: %v", creds.URIs[0], err)
	}
	peer := startPeer(t)
	r := uclient(t, uclientTimeout, u.Host+":"+itoa(int(u.Port)), "-u", creds.Username, "-w", creds.Password,
		"-e", "127.0.0.1", "-r", itoa(peer), "-X", "-c", "-m", "1", "-n", "20", "-l", "100")
	requireZeroLoss(t, r, 20)
	rec := a.waitLog("allocation deleted", 5*time.Second)
	if rec["user"] != "carol" {
		t.Errorf("usage record of %v, want carol", rec["user"])
	}
}

// TestFleetRedisOutage: with Redis stopped a live call loses nothing and
// refreshes; new Allocates follow fleet.on_outage (local on a, refuse on
// b); once Redis is back the fleet's counts are rebuilt from the nodes.
func TestFleetRedisOutage(t *testing.T) {
	f := newFleet(t)
	cfgB := f.config("b")
	cfgB.Fleet.OnOutage = "refuse"
	a := f.start("a")[0]
	b := start(t, cfgB)
	peer := echoPeer(t)
	call := testturn.Dial(t, "udp", a.UDP, "demo", "demo")
	call.MustAllocate()
	if code := call.Permit(peer); code != 0 {
		t.Fatalf("permission: %d", code)
	}

	f.redis.Stop()
	eventually(t, 5*time.Second, "a sees Redis down", func() bool {
		st, _ := a.status()["fleet"].(map[string]any)
		return st != nil && st["up"] == false
	})
	for i := range 20 {
		if !call.Echo(peer, "during the outage "+itoa(i)) {
			t.Fatalf("echo %d lost while Redis is down", i)
		}
	}
	if code := call.Refresh(10 * time.Minute); code != 0 {
		t.Fatalf("Refresh while Redis is down: %d", code)
	}
	if code := allocateCode(t, a, "demo", "demo"); code != 0 {
		t.Fatalf("a (on_outage local) while Redis is down: %d, want 0", code)
	}
	eventually(t, 5*time.Second, "b refuses while Redis is down", func() bool {
		return allocateCode(t, b, "demo", "demo") == 486
	})
	if got := b.metric(`turnd_allocations_rejected_total{reason="fleet_unavailable"}`); got < 1 {
		t.Errorf("b's fleet_unavailable rejections: %v", got)
	}
	if got := a.metric("turnd_fleet_outages_total"); got < 1 {
		t.Errorf("a's outages: %v", got)
	}

	f.redis.Restart()
	eventually(t, 10*time.Second, "a's two allocations counted again", func() bool {
		n, _ := f.redis.Admin().HGet(context.Background(), "turnd:users:demo", "a").Int()
		return n == 2
	})
	if code := allocateCode(t, b, "demo", "demo"); code != 486 {
		t.Fatalf("b after the recovery, demo at 2 on a: %d, want 486", code)
	}
	if !call.Echo(peer, "after the outage") {
		t.Fatal("the call lost a message after the outage")
	}
}

// credentials is a /credentials answer.
type credentials struct {
	Username string   `json:"username"`
	Password string   `json:"password"`
	TTL      int      `json:"ttl"`
	URIs     []string `json:"uris"`
}

func decodeCredentials(t *testing.T, body string) credentials {
	t.Helper()
	var c credentials
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatalf("credentials answer %q: %v", body, err)
	}
	return c
}
