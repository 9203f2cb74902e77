package e2e

import (
	"context"
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

func itoa(n int) string { return strconv.Itoa(n) }

// fieldInt is a usage stream field as a number.
func fieldInt(t *testing.T, v any) int {
	t.Helper()
	s, _ := v.(string)
	return atoi(t, s)
}
