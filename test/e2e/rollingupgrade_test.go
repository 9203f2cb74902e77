package e2e

import (
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// rollingNodes is how many turnd nodes the rolling upgrade replaces.
const rollingNodes = 3

// TestRollingUpgradeOfThreeNodes: three turnd nodes, each in a network
// namespace of its own, reached over a veth pair each from a client
// namespace where three Chromiums make one relay-only call through each
// node. The nodes are upgraded by hand-over one after the other (`ip netns
// exec NODE turnd upgrade --pid N`, the way an operator rolls a fleet) while
// numbered messages flow through every call: no call drops or loses a
// message, each keeps its candidate pair, each old process exits, and each
// call carries on through its new process. How long each replacement took
// (the upgrade command's start to its exit, and until the old process was
// gone) is logged, not asserted: these tests assert behaviour.
func TestRollingUpgradeOfThreeNodes(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium not installed: scripts/install-test-tools.sh installs Debian's chromium package")
	}
	requireNetns(t)
	clients := addNetns(t, "turnd-roll-c")
	nodes := make([]*chain, rollingNodes)
	for i := range nodes {
		ns := addNetns(t, fmt.Sprintf("turnd-roll-%d", i+1))
		host := linkNode(t, clients, ns, i)
		cfg := testConfig()
		cfg.Listen.UDP, cfg.Listen.TCP = []string{host + ":0"}, []string{host + ":0"}
		cfg.HTTP.Address = ""
		nodes[i] = startChain(t, writeConfig(t, cfg), []string{"ip", "netns", "exec", string(ns)})
	}
	calls := make([]*browser, rollingNodes)
	pairs := make([]candidatePair, rollingNodes)
	for i, n := range nodes {
		calls[i] = newBrowserIn(t, clients, "")
		pairs[i] = calls[i].startCall(demoServer("turn:" + n.UDP + "?transport=udp"))
	}

	// Every call sends a message each 10 ms for 4 s, a tenth of them
	// before the first node's upgrade.
	const messages = 400
	for _, b := range calls {
		var started bool
		b.eval(fmt.Sprintf("(window.running = burst(%d, 10), true)", messages), &started)
	}
	for _, b := range calls {
		var sent int
		b.eval(fmt.Sprintf("sentReaches(%d)", messages/10), &sent)
	}
	for i, n := range nodes {
		old := n.serving()
		successor, took := n.upgrade()
		gone := n.waitGone(old, 5*time.Second)
		handed := n.waitLog("handed over", time.Second)
		t.Logf("node %d: pid %d -> %d: upgrade command %v, old process gone %v later; frozen %v ns, %v allocations moved",
			i+1, old.pid, successor.pid, took.Round(time.Millisecond), gone.Round(time.Millisecond),
			handed["frozen"], handed["allocations_moved"])
		if handed["allocations_moved"] != 2.0 || handed["allocations_stayed"] != 0.0 {
			t.Errorf("node %d handed over: moved %v, stayed %v; want its call's 2 moved, 0 stayed", i+1,
				handed["allocations_moved"], handed["allocations_stayed"])
		}
	}
	for i, b := range calls {
		var r burstResult
		b.eval("window.running", &r)
		t.Logf("call %d across the rolling upgrade: %d of %d messages echoed", i+1, r.Echoed, r.Sent)
		if r.Sent != messages || r.Echoed != r.Sent {
			t.Errorf("call %d across the rolling upgrade: %d of %d messages echoed, want every one", i+1, r.Echoed, r.Sent)
		}
	}
	// Every call goes on through its node's new process.
	for i, b := range calls {
		if r := b.burst(burstMessages/2, burstGap); r.Echoed != r.Sent {
			t.Errorf("call %d after the rolling upgrade: %d of %d messages echoed, want every one", i+1, r.Echoed, r.Sent)
		}
		var after candidatePair
		b.eval("pair()", &after)
		if after != pairs[i] {
			t.Errorf("call %d changed its pair:\nbefore %+v\nafter  %+v", i+1, pairs[i], after)
		}
	}
	for i, n := range nodes {
		if got := n.usageRecords("", ""); len(got) != 0 {
			t.Errorf("node %d ended allocations during the calls: %v", i+1, got)
		}
	}
}

// linkNode joins the client namespace to node i's with a veth pair on a
// /24 of its own and returns the node's address.
func linkNode(t *testing.T, clients, node netns, i int) string {
	t.Helper()
	cdev, ndev := fmt.Sprintf("rc%d", i), fmt.Sprintf("rn%d", i)
	clientIP, nodeIP := fmt.Sprintf("10.213.%d.1", 50+i), fmt.Sprintf("10.213.%d.2", 50+i)
	clients.ip(t, "link", "add", cdev, "type", "veth", "peer", "name", ndev, "netns", string(node))
	clients.ip(t, "addr", "add", clientIP+"/24", "dev", cdev)
	clients.ip(t, "link", "set", cdev, "up")
	node.ip(t, "addr", "add", nodeIP+"/24", "dev", ndev)
	node.ip(t, "link", "set", ndev, "up")
	return nodeIP
}
