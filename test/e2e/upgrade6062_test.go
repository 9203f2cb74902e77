package e2e

import (
	"net"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestUpgradeMovesRFC6062: an RFC 6062 allocation (pion's client, a TCP
// relay with a connection to a TCP peer) moves with its control and data
// connections and its peer connection: bytes flow both ways across the
// upgrade, the old process exits at once (it holds nothing), its Refresh
// is the new process's, and so is its usage record, counting every byte.
func TestUpgradeMovesRFC6062(t *testing.T) {
	l := startUpgradable(t, writeConfig(t, upgradeConfig(t)))
	c, tap, control := pionDial(t, "tcp", l.log.TCP, nil)
	alloc, err := c.AllocateTCP()
	if err != nil {
		t.Fatalf("allocate tcp: %v", err)
	}
	relay := alloc.Addr().(*net.TCPAddr)
	data, atPeer, peer := connectPeer(t, alloc)
	relayed := exchange(t, "before the upgrade", data, atPeer)

	old := l.serving()
	next := l.upgrade()
	l.handedOver(0, next, 1, 0)
	relayed += exchange(t, "after the upgrade", data, atPeer)
	if code := old.waitGone(t, 10*time.Second, l.log); code != 0 {
		t.Errorf("the old turnd exited %d after handing over all it held, want 0", code)
	}
	requireOwner(t, "the control connection", "tcp", l.log.TCP, control, next, next)
	requireOwner(t, "the relay's connection to the peer", "tcp", relay.String(), peer, next, next)
	refresh(t, c, tap, refreshTo)
	relayed += exchange(t, "after the refresh", data, atPeer)
	relayedTo(t, testturn.Dial(t, "tcp", l.log.TCP, "demo", "demo"), echoPeer(t), next, next)

	released := l.log.logCount()
	if err := alloc.Close(); err != nil { // Refresh(0) on the control connection
		t.Fatalf("close: %v", err)
	}
	rec, _ := l.log.waitLogFrom(released, "allocation deleted", 5*time.Second)
	if rec["relay"] != relay.String() || rec["reason"] != "released" ||
		rec["to_peer_bytes"] != float64(relayed) || rec["from_peer_bytes"] != float64(relayed) {
		t.Errorf("usage record %v, want the TCP relay %v released with %d bytes each way", rec, relay, relayed)
	}
}

// relayedTo is relayed, and checks that want alone of procs holds the
// client's relayed socket.
func relayedTo(t *testing.T, c *testturn.Client, peer *net.UDPAddr, want *proc, procs ...*proc) {
	t.Helper()
	relay := c.MustAllocate()
	if code := c.Permit(peer); code != 0 {
		t.Fatalf("CreatePermission: error %d", code)
	}
	if !c.Echo(peer, "relayed") {
		t.Fatal("no echo through the relay")
	}
	requireOwner(t, "a new client's relayed socket", "udp", relay.String(), "", want, procs...)
}
