package deploytest

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	rollNodes = 3
	peerPort  = 3480 // and +1: uclient sends RTCP there
	// uclient -m uclientM -n uclientN -z 20 over TCP: 2 s of traffic (about
	// 5 s a run), so it ends long before the drain deadline and, over TCP,
	// releases everything.
	uclientM, uclientN = 2, 100
)

// cluster is the test's nodes, clients and what runs on them.
type cluster struct {
	ip, uclient string
	clients     netns
	nodes       []node
	peers       []netip.AddrPort
	pods        []pod
	procs       []*turndProc
	calls       []*session
	user, pass  string
	secret      string
}

// TestRollingRestart rolls turnd over three nodes as a StatefulSet does
// with hostNetwork pods: one node at a time, the old pod gets SIGTERM, the
// new one may start only after it has exited (same host ports), and the
// rollout moves on once the new one is ready. Each node is a network
// namespace linked to a "clients" namespace by its own veth pair:
//
//	clients ns: 10.213.N.1/30 ── veth ── node N ns: 10.213.N.2/30 (turnd on the chart's ports)
//
// Clients and the UDP echo peers live in the clients namespace; the echo peer
// for node N listens on 10.213.N.1, which node N's relay reaches directly.
// Each node keeps one raw-client call going, and every step adds a burst of
// coturn uclient load on every node. No call or uclient run that ends before
// the drain deadline may lose a packet.
func TestRollingRestart(t *testing.T) {
	bin := turndBin(t)
	ip := requireNetns(t)
	c := &cluster{ip: ip, uclient: tool(t, "TURNUTILS_UCLIENT", "turnutils_uclient")}
	began := time.Now()
	r := render(t, "-f", valuesFile("defaults.values.yaml"), "--set-string", "config.drain.timeout="+drainTimeout.String())
	c.secret = onlyConfig(t, r).Auth.Secrets[0]
	c.user, c.pass = restCredentials(c.secret, "caller", time.Now().Add(time.Hour).Unix())
	c.build(t)

	for i := range c.nodes {
		c.pods = append(c.pods, planPod(t, r, c.nodes[i]))
		c.procs = append(c.procs, c.pods[i].start(t, bin, c.nodes[i], fmt.Sprintf("turnd on node%d", i)))
	}
	for i := range c.nodes {
		c.pods[i].waitReady(t, c.procs[i], c.kubelet(i), c.nodes[i])
		c.calls = append(c.calls, c.call(t, i, "v1"))
	}
	t.Logf("3 nodes ready with a call each after %v", time.Since(began).Round(time.Millisecond))

	rollout := time.Now()
	for i := range c.nodes {
		c.restart(t, bin, i)
	}
	t.Logf("rolling restart of %d nodes took %v", rollNodes, time.Since(rollout).Round(time.Millisecond))

	for i, call := range c.calls {
		if _, err := call.close(endRefreshZero); err != nil {
			t.Error(err)
		}
		t.Log(call.summary())
		// Idle now: SIGTERM stops it at once.
		c.procs[i].signal(syscall.SIGTERM)
		if code, _ := c.procs[i].waitExit(5 * time.Second); code != 0 {
			t.Errorf("node%d: exit code %d", i, code)
		}
	}
	t.Logf("whole test %v", time.Since(began).Round(time.Millisecond))
}

// build makes the namespaces, links and echo peers. Cleanups delete the
// namespaces last, after every process in them has been killed.
func (c *cluster) build(t *testing.T) {
	t.Helper()
	prefix := "turnd" + strconv.Itoa(os.Getpid())
	c.clients = addNetns(t, c.ip, prefix+"-clients")
	for i := 0; i < rollNodes; i++ {
		ns := addNetns(t, c.ip, fmt.Sprintf("%s-node%d", prefix, i))
		linkVeth(t, c.ip,
			vethEnd{c.clients, fmt.Sprintf("to-node%d", i), fmt.Sprintf("10.213.%d.1/30", i)},
			vethEnd{ns, "eth0", fmt.Sprintf("10.213.%d.2/30", i)})
		c.nodes = append(c.nodes, node{name: fmt.Sprintf("node%d", i), ip: netip.AddrFrom4([4]byte{10, 213, byte(i), 2}), ns: ns})
		peer := fmt.Sprintf("10.213.%d.1:", i)
		c.peers = append(c.peers, startEchoPeer(t, c.clients.listenPacket, peer+strconv.Itoa(peerPort), peer+strconv.Itoa(peerPort+1))[0])
	}
}

// kubelet is node i's kubelet's HTTP client: probes come from the node itself.
func (c *cluster) kubelet(i int) *http.Client { return c.nodes[i].ns.httpClient(5 * time.Second) }

// turnAddr is node i's TURN over TCP (and UDP) address: the chart's port on
// the node's address, each node having its own network.
func (c *cluster) turnAddr(i int) netip.AddrPort {
	return netip.AddrPortFrom(c.nodes[i].ip, uint16(c.pods[i].ports["turn-tcp"]))
}

// call starts a call on node i and waits until it relays.
func (c *cluster) call(t *testing.T, i int, version string) *session {
	t.Helper()
	s, err := openSession(t, fmt.Sprintf("call@node%d-%s", i, version), c.clients.dial, c.turnAddr(i).String(), c.user, c.pass, c.peers[i])
	if err != nil {
		t.Fatal(err)
	}
	if err := s.waitEchoed(5, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return s
}

// uclientRun is one background uclient run and when it ended.
type uclientRun struct {
	node  int
	res   uclientResult
	err   error
	ended time.Time
}

// load starts one uclient run per node in the background. Runs still going
// when the test ends are killed and waited for before the namespaces go.
func (c *cluster) load(t *testing.T) <-chan uclientRun {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	out := make(chan uclientRun, rollNodes)
	for j := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runUclient(ctx, c.ip, c.uclient, c.clients, 30*time.Second, c.turnAddr(j),
				"-t", "-u", fmt.Sprintf("load-node%d", j), "-W", c.secret, "-e", c.peers[j].Addr().String(),
				"-r", strconv.Itoa(peerPort), "-X", "-m", strconv.Itoa(uclientM), "-n", strconv.Itoa(uclientN), "-z", "20", "-l", "100")
			out <- uclientRun{node: j, res: res, err: err, ended: time.Now()}
		}()
	}
	return out
}

// restart replaces node i's turnd: SIGTERM, wait for it to exit by itself,
// start the new one, wait until it is ready.
func (c *cluster) restart(t *testing.T, bin string, i int) {
	t.Helper()
	old, n := c.procs[i], c.nodes[i]
	since := old.mark()
	runs := c.load(t)
	// SIGTERM once node i's uclient holds all its allocations, so the drain
	// has load of both kinds to carry. uclient first makes a probe
	// allocation, which it releases once its clients have allocated.
	user := fmt.Sprintf("load-node%d", i)
	old.waitLogs(user+"'s allocations", 15*time.Second, func(lines []map[string]any) bool {
		created, live := allocationsOf(lines[since:], user)
		return created > uclientM && live == uclientM
	})

	sigterm := time.Now()
	old.signal(syscall.SIGTERM)
	for {
		code, err := c.pods[i].readiness.probe(c.kubelet(i), n)
		if err == nil && code == http.StatusServiceUnavailable {
			break
		}
		if time.Since(sigterm) > readinessFlip {
			t.Fatalf("node%d: readiness still %d %v %v after SIGTERM", i, code, err, readinessFlip)
		}
	}
	wantProbe(t, c.pods[i].liveness, c.kubelet(i), n, http.StatusOK, fmt.Sprintf("node%d liveness while draining", i))

	c.newClientMovesOn(t, i)

	// The call on node i carries on into the drain, then hangs up.
	call := c.calls[i]
	if err := call.waitEchoed(call.count()+25, 5*time.Second); err != nil {
		t.Fatalf("node%d draining: %v", i, err)
	}
	lastEnd, err := call.close(endRefreshZero)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(call.summary())

	// The old turnd leaves by itself once its last session is gone, and
	// the new version starts at once on the same node, address and ports,
	// as the StatefulSet controller does when the old pod is gone.
	code, exited := old.waitExit(time.Until(sigterm.Add(drainTimeout)) + 2*time.Second)
	if code != 0 {
		t.Errorf("node%d: exit code %d", i, code)
	}
	if line := old.waitLog("drain complete", time.Second); line["reason"] != "drained" || line["force_closed"] != float64(0) {
		t.Errorf("node%d: drain complete: %v, want reason drained with nothing force-closed", i, line)
	}
	c.procs[i] = c.pods[i].start(t, bin, n, fmt.Sprintf("turnd v2 on node%d", i))
	ready := c.pods[i].waitReady(t, c.procs[i], c.kubelet(i), n)

	for range c.nodes {
		run := <-runs
		if run.err == nil {
			run.err = run.res.zeroLoss(uclientM * uclientN)
		}
		if run.err != nil {
			t.Fatalf("uclient on node%d during the restart of node%d: %v", run.node, i, run.err)
		}
		t.Logf("uclient -t -m %d on node%d: %d/%d messages echoed, 0 lost, run took %v",
			uclientM, run.node, run.res.recv, run.res.sent, run.res.took.Round(time.Millisecond))
		if run.node == i && run.ended.After(lastEnd) {
			lastEnd = run.ended
		}
	}
	if d := exited.Sub(lastEnd); d > time.Second {
		t.Errorf("node%d: turnd exited %v after its last session ended, want within 1s", i, d)
	}
	c.calls[i] = c.call(t, i, "v2")
	for j, other := range c.calls {
		if err := other.waitEchoed(other.count()+1, 5*time.Second); err != nil {
			t.Fatalf("call on node%d after node%d's restart: %v", j, i, err)
		}
	}
	t.Logf("node%d: drained in %v (SIGTERM to exit), new turnd ready %v later; step %v",
		i, exited.Sub(sigterm).Round(time.Millisecond), ready.Sub(exited).Round(time.Millisecond),
		time.Since(sigterm).Round(time.Millisecond))
}

// newClientMovesOn plays a client that lands on draining node i: it is told
// 486 and allocates on the next node instead, where its media flows.
func (c *cluster) newClientMovesOn(t *testing.T, i int) {
	t.Helper()
	var tried []string
	for k := 0; k < rollNodes; k++ {
		j := (i + k) % rollNodes
		tc, err := dialTURN(c.clients.dial, "udp", c.turnAddr(j).String(), c.user, c.pass)
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		code, signed, relay, err := tc.allocate()
		if err != nil {
			t.Fatalf("new client on node%d: %v", j, err)
		}
		result := strconv.Itoa(code)
		if code == 0 {
			result = "allocated"
		}
		tried = append(tried, fmt.Sprintf("node%d: %s", j, result))
		if j == i {
			if code != 486 || !signed {
				t.Fatalf("new client on draining node%d: %d (signed %v), want a signed 486", i, code, signed)
			}
			continue
		}
		if code != 0 {
			continue
		}
		if err := codeErr(tc.permit(c.peers[j])); err != nil {
			t.Fatalf("new client on node%d: permission: %v", j, err)
		}
		if err := tc.send(c.peers[j], []byte("hello")); err != nil {
			t.Fatal(err)
		}
		data, _, err := tc.readData(time.Now().Add(echoTimeout))
		if err != nil || string(data) != "hello" {
			t.Fatalf("new client on node%d: echo %q %v", j, data, err)
		}
		if err := codeErr(tc.refresh(0)); err != nil {
			t.Fatalf("new client on node%d: refresh 0: %v", j, err)
		}
		t.Logf("new client while node%d drains: %v; relayed via %v", i, tried, relay)
		return
	}
	t.Fatalf("new client found no node: %v", tried)
}
