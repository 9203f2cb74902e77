package deploytest

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// drainTimeout keeps the rendered drain short so a test that waited for the
// deadline would still end; the tests assert turnd never needs it.
const drainTimeout = 20 * time.Second

// readinessFlip is how soon after SIGTERM /readyz must fail (README: "at
// once, well under 100 ms").
const readinessFlip = 100 * time.Millisecond

// TestTerminationLikeKubelet terminates a turnd pod the way the kubelet does,
// from the rendered chart alone: SIGTERM and nothing else (no preStop hook),
// then waiting for the process within terminationGracePeriodSeconds.
// A call in progress keeps relaying through the drain; turnd exits 0 by
// itself as soon as the call ends, however the client ends it.
func TestTerminationLikeKubelet(t *testing.T) {
	bin := turndBin(t)
	for _, how := range []sessionEnd{endRefreshZero, endCloseConn} {
		t.Run(how.String(), func(t *testing.T) { terminatePod(t, bin, how) })
	}
}

func terminatePod(t *testing.T, bin string, how sessionEnd) {
	turnPort, httpPort := freePorts(t)
	// Loopback stands in for the node address here, and loopback peers are
	// denied by default; the echo peer is on loopback too.
	r := render(t, "-f", valuesFile("defaults.values.yaml"),
		"--set-string", "config.drain.timeout="+drainTimeout.String(),
		"--set", "config.peers.allow_loopback=true",
		"--set", "ports.turn="+strconv.Itoa(turnPort), "--set", "ports.http="+strconv.Itoa(httpPort))
	if lc := r.container(t).Lifecycle; lc != nil && lc.PreStop != nil {
		t.Fatalf("the pod has a preStop hook (%+v): SIGTERM alone must drain turnd", lc.PreStop)
	}
	n := node{name: "node-a", ip: netip.MustParseAddr("127.0.0.1")}
	p := planPod(t, r, n)
	if p.readiness.path == p.liveness.path {
		t.Fatalf("readiness and liveness probe the same path %s: a draining pod would be restarted or stay ready", p.readiness.path)
	}
	deadline := drainTimeout // + drain.delay, 0 in the chart's defaults
	if p.terminationGrace <= deadline {
		t.Fatalf("terminationGracePeriodSeconds %v does not outlast the drain deadline %v", p.terminationGrace, deadline)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	proc := p.start(t, bin, n, "turnd")
	p.waitReady(t, proc, client, n)
	wantProbe(t, p.liveness, client, n, http.StatusOK, "liveness before the drain")

	user, pass := restCredentials(onlyConfig(t, r).Auth.Secrets[0], "caller", time.Now().Add(time.Hour).Unix())
	server := net.JoinHostPort(n.ip.String(), strconv.Itoa(p.ports["turn-tcp"]))
	peer := startEchoPeer(t, net.ListenPacket, "127.0.0.1:0")[0]
	call, err := openSession(t, "call", net.Dial, server, user, pass, peer)
	if err != nil {
		t.Fatal(err)
	}
	if err := call.waitEchoed(10, 5*time.Second); err != nil {
		t.Fatal(err)
	}

	// The kubelet's SIGTERM.
	sigterm := time.Now()
	proc.signal(syscall.SIGTERM)
	for {
		code, err := p.readiness.probe(client, n)
		if err == nil && code == http.StatusServiceUnavailable {
			t.Logf("readiness %s failed %v after SIGTERM", p.readiness.path, time.Since(sigterm).Round(time.Microsecond))
			break
		}
		if time.Since(sigterm) > readinessFlip {
			t.Fatalf("readiness %s still %d %v %v after SIGTERM, want 503 at once", p.readiness.path, code, err, readinessFlip)
		}
	}
	wantProbe(t, p.liveness, client, n, http.StatusOK, "liveness during the drain")
	proc.waitLog("drain started", time.Second)

	// New calls are refused with a reason the client can act on.
	for _, network := range []string{"udp", "tcp"} {
		c, err := dialTURN(net.Dial, network, server, user, pass)
		if err != nil {
			t.Fatal(err)
		}
		code, signed, _, err := c.allocate()
		c.Close()
		if err != nil || code != 486 || !signed {
			t.Errorf("new Allocate over %s while draining: %d (signed %v) %v, want a signed 486", network, code, signed, err)
		}
	}

	// The call in progress keeps relaying and refreshing.
	echoed, refreshes := call.count(), call.refreshCount()
	if err := call.waitEchoed(echoed+75, 5*time.Second); err != nil {
		t.Fatalf("the live call during the drain: %v", err)
	}
	if call.refreshCount() <= refreshes {
		t.Error("the live call made no refresh during the drain")
	}
	if proc.exited() {
		t.Fatal("turnd exited while a call was live")
	}
	wantProbe(t, p.readiness, client, n, http.StatusServiceUnavailable, "readiness later in the drain")
	wantProbe(t, p.liveness, client, n, http.StatusOK, "liveness later in the drain")

	// The call ends; turnd must follow within a second, by itself.
	ended, err := call.close(how)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(call.summary())
	code, exited := proc.waitExit(5 * time.Second)
	if code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if d := exited.Sub(ended); d > time.Second {
		t.Errorf("turnd exited %v after the last call ended (%s), want within 1s", d, how)
	}
	line := proc.waitLog("drain complete", time.Second)
	if line["reason"] != "drained" || line["force_closed"] != float64(0) {
		t.Errorf("drain complete: %v, want reason drained with nothing force-closed", line)
	}
	total := exited.Sub(sigterm)
	if total >= deadline {
		t.Errorf("SIGTERM to exit took %v: turnd waited for its deadline %v instead of the call", total, deadline)
	}
	t.Logf("SIGTERM to exit %v (call ended %v before exit); drain deadline %v, terminationGracePeriodSeconds %v",
		total.Round(time.Millisecond), exited.Sub(ended).Round(time.Microsecond), deadline, p.terminationGrace)
}

func wantProbe(t *testing.T, hp httpProbe, client *http.Client, n node, want int, what string) {
	t.Helper()
	if code, err := hp.probe(client, n); err != nil || code != want {
		t.Errorf("%s (%s): %d %v, want %d", what, hp.path, code, err, want)
	}
}

// freePorts returns a port free for both UDP and TCP on loopback (TURN) and
// another free for TCP (HTTP), for the chart's ports.* values. They were
// free a moment ago; nothing else in this test binds them.
func freePorts(t *testing.T) (turnPort, httpPort int) {
	t.Helper()
	for i := 0; i < 20; i++ {
		tl, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := tl.Addr().(*net.TCPAddr).Port
		ul, err := net.ListenPacket("udp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			tl.Close()
			continue
		}
		hl, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		httpPort = hl.Addr().(*net.TCPAddr).Port
		tl.Close()
		ul.Close()
		hl.Close()
		return port, httpPort
	}
	t.Fatal("no port free for both UDP and TCP on 127.0.0.1")
	return 0, 0
}
