package e2e

import (
	"bytes"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/pion/stun/v4"
	"github.com/pion/turn/v5"

	"github.com/turnd/turnd/internal/testturn"
)

// TestPionClient holds turnd against pion/turn's client, an implementation
// independent of turnd's handlers (only its server half leaves turnd): UDP
// allocations reached over UDP and over TCP with a permission, a channel and
// datagrams both ways, an IPv6 one (pion's client asks for the family of
// its socket with REQUESTED-ADDRESS-FAMILY), an RFC 6062 TCP allocation with
// a connection each way, a Refresh, and a release the server records as such.
func TestPionClient(t *testing.T) {
	cfg := testConfig()
	cfg.Listen.UDP = []string{"127.0.0.1:0", "[::1]:0"}
	srv := start(t, cfg)
	udp6 := srv.waitLog("turnd serving", time.Second)["udp"].([]any)[1].(string)
	for _, tc := range []struct {
		name, network, server string
		loopback              net.IP
	}{
		{"udp", "udp", srv.UDP, net.IPv4(127, 0, 0, 1)},
		{"tcp", "tcp", srv.TCP, net.IPv4(127, 0, 0, 1)},
		{"udp6", "udp", udp6, net.IPv6loopback},
	} {
		t.Run(tc.name, func(t *testing.T) { pionUDPAllocation(t, srv, tc.network, tc.server, tc.loopback) })
	}
	t.Run("rfc6062", func(t *testing.T) { pionTCPAllocation(t, srv) })
}

// dialPion is pion's client on a fresh socket (udp) or connection (tcp) to
// server from local, its frames seen by a wireTap.
func dialPion(t *testing.T, network, server string, local net.IP) (*turn.Client, *wireTap) {
	t.Helper()
	tap := &wireTap{}
	if network == "udp" {
		conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: local})
		if err != nil {
			t.Fatal(err)
		}
		tap.PacketConn = conn
	} else {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: local}}
		conn, err := d.Dial("tcp", server)
		if err != nil {
			t.Fatal(err)
		}
		tap.PacketConn = turn.NewSTUNConn(conn)
	}
	quiet := logging.NewDefaultLoggerFactory()
	quiet.DefaultLogLevel = logging.LogLevelWarn
	c, err := turn.NewClient(&turn.ClientConfig{
		TURNServerAddr: server, Username: "demo", Password: "demo",
		Conn: tap, LoggerFactory: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); tap.Close() })
	return c, tap
}

// pionUDPAllocation runs one UDP allocation through server, reached over
// network from loopback (whose family the relay and the peer share).
func pionUDPAllocation(t *testing.T, srv *turnd, network, server string, loopback net.IP) {
	c, tap := dialPion(t, network, server, loopback)
	pc, err := c.Allocate()
	if err != nil {
		t.Fatalf("allocate: %v", err)
	}
	relay := pc.LocalAddr().(*net.UDPAddr)
	if (relay.IP.To4() == nil) != (loopback.To4() == nil) {
		t.Fatalf("relayed address %v, want the family of %v", relay, loopback)
	}
	// pion asks for IPv6 only (IPv4 is the default), so an IPv6 relay answers the request.
	for _, f := range tap.sent(stun.NewType(stun.MethodAllocate, stun.ClassRequest)) {
		if asked := slices.Contains(f.attrs, stun.AttrRequestedAddressFamily); asked != (loopback.To4() == nil) {
			t.Errorf("Allocate with attributes %v from %v: REQUESTED-ADDRESS-FAMILY %v", f.attrs, loopback, asked)
		}
	}
	peer, err := net.ListenUDP("udp", &net.UDPAddr{IP: loopback})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	peerAddr := peer.LocalAddr().(*net.UDPAddr)
	if err := c.CreatePermission(peerAddr); err != nil {
		t.Fatalf("create permission: %v", err)
	}

	// pion sends its first datagrams as Send indications while its
	// ChannelBind runs behind them, then switches to the channel. Each
	// round is an echo, microseconds on loopback: the count is bounded by
	// time as well, as a busy machine can take longer than 50 of them to
	// answer the ChannelBind.
	toPeer, bound := 0, false
	for i, end := 0, time.Now().Add(5*time.Second); i < 5000 && !bound && time.Now().Before(end); i++ {
		payload := []byte(fmt.Sprintf("pion %s to peer #%d", network, i))
		if _, err := pc.WriteTo(payload, peerAddr); err != nil {
			t.Fatalf("write to peer: %v", err)
		}
		got, from := readUDP(t, peer)
		if !bytes.Equal(got, payload) || from.String() != relay.String() {
			t.Fatalf("peer got %q from %v, want %q from the relay %v", got, from, payload, relay)
		}
		toPeer += len(payload)
		f, _ := tap.carrier(true, payload)
		bound = f.channel != 0
	}
	if !bound {
		t.Fatal("pion's client never sent on a channel: no ChannelBind took")
	}
	if n := tap.count(stun.NewType(stun.MethodChannelBind, stun.ClassSuccessResponse)); n != 1 {
		t.Errorf("%d ChannelBind success responses, want 1", n)
	}

	reply := []byte("peer to pion over " + network + ", on the channel")
	if _, err := peer.WriteToUDP(reply, relay); err != nil {
		t.Fatal(err)
	}
	_ = pc.SetReadDeadline(time.Now().Add(readDeadline))
	buf := make([]byte, 1500)
	n, from, err := pc.ReadFrom(buf)
	if err != nil || !bytes.Equal(buf[:n], reply) || from.String() != peerAddr.String() {
		t.Fatalf("pion read %q from %v (%v), want %q from the peer %v", buf[:n], from, err, reply, peerAddr)
	}
	if f, _ := tap.carrier(false, reply); f.channel == 0 {
		t.Errorf("the peer's datagram reached pion as %v, want ChannelData on the bound channel", f.typ)
	}

	refresh(t, c, tap, refreshTo)
	if err := pc.Close(); err != nil { // Refresh with lifetime 0, not awaited by pion
		t.Fatalf("close: %v", err)
	}
	rec := usageRecord(t, srv, relay.String())
	if rec["reason"] != "released" || rec["transport"] != network ||
		rec["to_peer_bytes"] != float64(toPeer) || rec["from_peer_bytes"] != float64(len(reply)) ||
		rec["channels"] != float64(1) {
		t.Errorf("usage record %v, want released over %s with %d bytes to the peer, %d from it, 1 channel",
			rec, network, toPeer, len(reply))
	}
}

// refreshTo is a lifetime between the default (10 minutes, what a shorter
// request gets) and the cap, so the server must grant exactly it.
const refreshTo = 20 * time.Minute

// refresh sends a Refresh of lifetime d through pion's transaction layer
// (its client exposes none of its own) with the credentials it was given,
// and checks the server grants d.
func refresh(t *testing.T, c *turn.Client, tap *wireTap, d time.Duration) {
	t.Helper()
	realm, nonce := tap.credentials()
	integrity := stun.NewLongTermIntegrity("demo", realm.String(), "demo")
	msg, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodRefresh, stun.ClassRequest),
		testturn.Lifetime(d), stun.NewUsername("demo"), realm, nonce, integrity, stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.PerformTransaction(msg, c.TURNServerAddr(), false)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if res.Msg.Type != stun.NewType(stun.MethodRefresh, stun.ClassSuccessResponse) ||
		testturn.LifetimeOf(t, res.Msg) != d || integrity.Check(res.Msg) != nil {
		t.Fatalf("refresh answered %v (error %d), want a signed success granting %v", res.Msg, testturn.ErrorCode(res.Msg), d)
	}
}

// readUDP reads one datagram, failing the test after readDeadline.
func readUDP(t *testing.T, c *net.UDPConn) ([]byte, *net.UDPAddr) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(readDeadline))
	buf := make([]byte, 1500)
	n, from, err := c.ReadFromUDP(buf)
	if err != nil {
		t.Fatalf("peer read: %v", err)
	}
	return buf[:n], from
}

// usageRecord waits for the usage record of the allocation on relay.
func usageRecord(t *testing.T, srv *turnd, relay string) map[string]any {
	t.Helper()
	deadline := time.After(readDeadline)
	for {
		srv.mu.Lock()
		for _, l := range srv.lines {
			if l["msg"] == "allocation deleted" && l["relay"] == relay {
				srv.mu.Unlock()
				return l
			}
		}
		added := srv.added
		srv.mu.Unlock()
		select {
		case <-added:
		case <-deadline:
			t.Fatalf("no usage record for the relay %s within %v", relay, readDeadline)
		}
	}
}
