package e2e

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// TestUpgradeMovesHalfReadTCPFrames: a plain TCP client has sent the first
// half of a Send indication, and turnd has read it (the kernel holds none
// of it) when the upgrade comes; the client sends the rest to the new
// process, and the peer gets the datagram once, followed by the next.
func TestUpgradeMovesHalfReadTCPFrames(t *testing.T) {
	l := startUpgradable(t, writeConfig(t, upgradeConfig(t)))
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	peerAddr := peer.LocalAddr().(*net.UDPAddr)
	c := testturn.Dial(t, "tcp", l.log.TCP, "demo", "demo")
	relay := c.MustAllocate()
	if code := c.Permit(peerAddr); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	local := c.LocalAddr().String()
	frame := func(data string) []byte {
		m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
			testturn.PeerAddr(peerAddr), testturn.RawAttr(stun.AttrData, []byte(data)), stun.Fingerprint)
		if err != nil {
			t.Fatal(err)
		}
		return m.Raw
	}
	// The peer must get exactly these, in this order: UDP on loopback
	// keeps one sender's order, so a datagram lost or repeated shows.
	arrives := func(want ...string) {
		t.Helper()
		for _, w := range want {
			got, from := readUDP(t, peer)
			if string(got) != w || from.String() != relay.String() {
				t.Fatalf("the peer got %q from %v, want %q from the relay %v", got, from, w, relay)
			}
		}
	}
	write := func(b []byte) {
		t.Helper()
		if _, err := c.Conn().Write(b); err != nil {
			t.Fatal(err)
		}
	}
	write(frame("before"))
	arrives("before")
	split := frame("a frame split across the upgrade")
	half := len(split) / 2
	write(split[:half])
	awaitRead(t, l.log.TCP, local)

	old := l.serving()
	next := l.upgrade()
	l.handedOver(0, next, 1, 0)
	if code := old.waitGone(t, 10*time.Second, l.log); code != 0 {
		t.Errorf("the old turnd exited %d after handing over, want 0", code)
	}
	requireOwner(t, "the client's connection", "tcp", l.log.TCP, local, next, old, next)
	write(append(append([]byte{}, split[half:]...), frame("the next frame")...))
	write(frame("after"))
	arrives("a frame split across the upgrade", "the next frame", "after")
	if code := c.Refresh(0); code != 0 {
		t.Fatalf("release on the new process: %d", code)
	}
	if rec := usageRecord(t, l.log, relay.String()); rec["to_peer_packets"] != float64(4) {
		t.Errorf("usage record %v, want 4 packets to the peer", rec)
	}
}

// awaitRead waits until turnd has read everything the client on remote
// sent to local: the kernel's receive queue of turnd's end is empty
// (/proc/net/tcp), bounded: 2 s.
func awaitRead(t *testing.T, local, remote string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Second)
	for {
		q, ok := rxQueue(t, local, remote)
		if ok && q == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("turnd left %d bytes unread on the connection from %s (found %v)", q, remote, ok)
		}
	}
}

// rxQueue is the receive queue of the TCP socket bound to local and
// connected to remote, from /proc/net/tcp.
func rxQueue(t *testing.T, local, remote string) (int64, bool) {
	t.Helper()
	b, err := readProcNet("tcp")
	if err != nil {
		t.Fatal(err)
	}
	wl, wr := procNetAddr(t, local), procNetAddr(t, remote)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || f[1] != wl || f[2] != wr {
			continue
		}
		_, rx, _ := strings.Cut(f[4], ":")
		n, err := strconv.ParseInt(rx, 16, 64)
		return n, err == nil
	}
	return 0, false
}
