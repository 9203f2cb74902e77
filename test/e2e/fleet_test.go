package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/redistest"
	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/config"
)

// fleetLease is the nodes' lease in these tests: heartbeats every second.
const fleetLease = 3 * time.Second

// fleetToken is the admin and credentials token of the test fleets.
const fleetToken = "e2e-fleet-token"

// fleet is a redis-server and the turnd nodes the test started on it.
type fleet struct {
	t     *testing.T
	redis *redistest.Server
	token string // the token file's path
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte(fleetToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &fleet{t: t, redis: redistest.Start(t), token: token}
}

// config is node name's configuration: the test config in the fleet,
// user_allocations 2, a long drain, the REST secret "s3cret".
func (f *fleet) config(name string) config.Config {
	cfg := testConfig()
	cfg.Fleet.Redis = f.redis.URL
	cfg.Fleet.Node = name
	cfg.Fleet.Lease = fleetLease
	cfg.Fleet.Timeout = time.Second
	cfg.Limits.UserAllocations = 2
	cfg.Drain.Timeout = time.Minute
	cfg.Auth.Secrets = []string{"s3cret"}
	cfg.Auth.Users["mallory"] = "m"
	cfg.HTTP.AdminTokenFile = f.token
	cfg.Fleet.Credentials.TokenFile = f.token
	return cfg
}

// start runs the named nodes, in order.
func (f *fleet) start(names ...string) []*turnd {
	var out []*turnd
	for _, n := range names {
		out = append(out, start(f.t, f.config(n)))
	}
	return out
}

// do sends an authorised request to a node's HTTP API.
func (f *fleet) do(p *turnd, method, path string) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, "http://"+p.HTTP+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+fleetToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

// eventually polls cond every 50 ms until it holds, or fails after
// within: what it waits for is written at a heartbeat, in the background.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond) // a heartbeat's write, in another process
	}
}

// allocateCode is the answer code of a fresh client's Allocate on p as user.
func allocateCode(t *testing.T, p *turnd, user, pass string) int {
	t.Helper()
	return testturn.ErrorCode(testturn.Dial(t, "udp", p.UDP, user, pass).Allocate())
}

// TestFleetUserQuotaWhicheverNode: with user_allocations 2 a user's third
// allocation is refused 486 on whichever node it asks, and releasing one
// lets the next through on another node.
func TestFleetUserQuotaWhicheverNode(t *testing.T) {
	f := newFleet(t)
	nodes := f.start("a", "b", "c")
	a, b, c := nodes[0], nodes[1], nodes[2]
	first := testturn.Dial(t, "udp", a.UDP, "demo", "demo")
	first.MustAllocate()
	testturn.Dial(t, "udp", b.UDP, "demo", "demo").MustAllocate()
	for _, p := range nodes {
		if code := allocateCode(t, p, "demo", "demo"); code != 486 {
			t.Fatalf("third allocation on %s: %d, want 486", p.UDP, code)
		}
	}
	if got := c.metric(`turnd_allocations_rejected_total{reason="fleet_quota"}`); got != 1 {
		t.Errorf("c's fleet_quota rejections: %v, want 1", got)
	}
	if code := first.Refresh(0); code != 0 {
		t.Fatalf("release: %d", code)
	}
	eventually(t, 5*time.Second, "an allocation on c after a's release", func() bool {
		return allocateCode(t, c, "demo", "demo") == 0
	})
	if code := allocateCode(t, a, "demo", "demo"); code != 486 {
		t.Fatalf("after c took the freed place, a: %d, want 486", code)
	}
}

// TestFleetKilledNodeReleasesWithinLease: a node killed with SIGKILL holds
// its users' places only until its lease lapses.
func TestFleetKilledNodeReleasesWithinLease(t *testing.T) {
	f := newFleet(t)
	nodes := f.start("a", "b")
	a, b := nodes[0], nodes[1]
	testturn.Dial(t, "udp", a.UDP, "demo", "demo").MustAllocate()
	testturn.Dial(t, "udp", a.UDP, "demo", "demo").MustAllocate()
	if code := allocateCode(t, b, "demo", "demo"); code != 486 {
		t.Fatalf("b while a holds both: %d, want 486", code)
	}
	killed := time.Now()
	a.signal(syscall.SIGKILL)
	a.waitExit(5 * time.Second)
	eventually(t, fleetLease+3*time.Second, "b admits once a's lease lapsed", func() bool {
		return allocateCode(t, b, "demo", "demo") == 0
	})
	if waited := time.Since(killed); waited > fleetLease+2*time.Second {
		t.Errorf("a's share lapsed %v after the kill, lease %v", waited, fleetLease)
	}
}

// TestFleetDisconnectAndRevocation: a disconnect asked of one node ends
// the user's allocations on the others; a revocation reloaded on one node
// is refused on the others.
func TestFleetDisconnectAndRevocation(t *testing.T) {
	f := newFleet(t)
	nodes := f.start("a", "b", "c")
	a, b, c := nodes[0], nodes[1], nodes[2]
	onB := testturn.Dial(t, "udp", b.UDP, "demo", "demo")
	onB.MustAllocate()
	onC := testturn.Dial(t, "udp", c.UDP, "demo", "demo")
	onC.MustAllocate()

	code, body := f.do(a, http.MethodPost, "/sessions/disconnect?user=demo")
	if code != http.StatusOK || !strings.Contains(body, `"fleet":true`) {
		t.Fatalf("disconnect on a: %d %s", code, body)
	}
	b.waitLog("disconnect requested", 5*time.Second)
	c.waitLog("disconnect requested", 5*time.Second)
	for _, cl := range []*testturn.Client{onB, onC} {
		if code := cl.Refresh(0); code != 437 {
			t.Errorf("Refresh after the fleet disconnect: %d, want 437", code)
		}
	}
	if rec := b.waitLog("allocation deleted", 5*time.Second); rec["reason"] != "disconnected" {
		t.Errorf("b's usage record %v", rec)
	}

	if code := allocateCode(t, c, "mallory", "m"); code != 0 {
		t.Fatalf("mallory before the revocation: %d", code)
	}
	cfg := f.config("a")
	cfg.Auth.RevokedUsers = []string{"mallory"}
	rewriteConfig(t, a.cfg, cfg)
	a.signal(syscall.SIGHUP)
	a.waitLog("reloaded", 5*time.Second)
	eventually(t, 5*time.Second, "c refuses mallory revoked on a", func() bool {
		return allocateCode(t, c, "mallory", "m") == 401
	})
	if code := allocateCode(t, b, "mallory", "m"); code != 401 {
		t.Errorf("b: mallory %d, want 401", code)
	}
}

// TestFleetSessions: every node's allocations, with the node's name, from
// any node and from `turnd sessions --fleet`.
func TestFleetSessions(t *testing.T) {
	f := newFleet(t)
	nodes := f.start("a", "b")
	a, b := nodes[0], nodes[1]
	relayed := testturn.Dial(t, "udp", b.UDP, "demo", "demo").MustAllocate()
	eventually(t, 5*time.Second, "a lists b's session", func() bool {
		code, body := f.do(a, http.MethodGet, "/sessions?scope=fleet")
		return code == http.StatusOK && strings.Contains(body, `"node": "b"`) && strings.Contains(body, relayed.String())
	})
	code, out := runTurnd(t, "sessions", "--fleet", "--http", a.HTTP, "--token-file", f.token)
	if code != 0 || !strings.Contains(out, "NODE") || !strings.Contains(out, relayed.String()) {
		t.Fatalf("turnd sessions --fleet: exit %d:\n%s", code, out)
	}
}

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

// TestFleetDrainRedirectsToLeastLoaded: a draining node with no
// alternate_servers answers 300 naming the least-loaded serving node.
func TestFleetDrainRedirectsToLeastLoaded(t *testing.T) {
	f := newFleet(t)
	nodes := f.start("a", "b", "c")
	a, b, c := nodes[0], nodes[1], nodes[2]
	testturn.Dial(t, "udp", a.UDP, "mallory", "m").MustAllocate() // keeps a draining
	testturn.Dial(t, "udp", b.UDP, "demo", "demo").MustAllocate() // b is busier than c
	eventually(t, 5*time.Second, "b's load published", func() bool {
		n, _ := f.redis.Admin().HGet(context.Background(), "turnd:node:b", "allocations").Int()
		return n == 1
	})
	a.signal(syscall.SIGTERM)
	a.waitLog("drain", 5*time.Second)
	var alt stun.AlternateServer
	eventually(t, 5*time.Second, "a 300 naming c", func() bool {
		resp := testturn.Dial(t, "udp", a.UDP, "demo", "demo").Allocate()
		if testturn.ErrorCode(resp) != 300 || alt.GetFrom(resp) != nil {
			return false
		}
		return net.JoinHostPort(alt.IP.String(), itoa(alt.Port)) == c.UDP
	})
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

func itoa(n int) string { return strconv.Itoa(n) }

// fieldInt is a usage stream field as a number.
func fieldInt(t *testing.T, v any) int {
	t.Helper()
	s, _ := v.(string)
	return atoi(t, s)
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
