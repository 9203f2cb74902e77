package e2e

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/pkg/config"
)

// kernelStopCase binds a channel from the client namespace to a peer,
// proves the kernel path relays it both ways, runs event, and then
// requires that the channel's datagrams go through the kernel no more
// (userSpaceData: the peer's may still reach the client, as Data
// indications).
func kernelStopCase(t *testing.T, edit func(*config.Config), event func(*kernelServer, *kernelChannel), userSpaceData bool) {
	t.Helper()
	k := newKernelNet(t)
	cfg := kernelConfig(t)
	if edit != nil {
		edit(&cfg)
	}
	srv := k.start(t, cfg, "tc")
	peer := k.listenPeer(t, kPeer4)
	ch := k.openChannel(t, kClient4, net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)), peer)
	ch.throughKernel(t, srv, payloads("before", 30))
	event(srv, ch)
	ch.requireStopped(t, srv, 30, userSpaceData)
}

// TestKernelStopsAtChannelExpiry: a channel that is not refreshed expires
// (limits.channel_lifetime 2s), and from then its ChannelData is relayed
// by neither path; the peer's datagrams reach the client only as Data
// indications, under the permission that outlives the channel.
func TestKernelStopsAtChannelExpiry(t *testing.T) {
	const lifetime = 2 * time.Second
	kernelStopCase(t, func(c *config.Config) { c.Limits.ChannelLifetime = lifetime },
		func(srv *kernelServer, ch *kernelChannel) {
			// The expiry shows as the first of the peer's datagrams that
			// arrives as a Data indication rather than on the channel.
			deadline := time.Now().Add(lifetime + 3*time.Second)
			for i := 0; time.Now().Before(deadline); i++ {
				ch.peer.send(t, ch.relay, "probe-"+strconv.Itoa(i))
				f, err := ch.c.ReadFrame(100 * time.Millisecond)
				if err != nil || len(f) < 4 || f[0]&0xC0 == 0x40 {
					continue
				}
				m := &stun.Message{Raw: f}
				if m.Decode() == nil && m.Type == stun.NewType(stun.MethodData, stun.ClassIndication) {
					ch.drainClient(200 * time.Millisecond) // probes sent before it may still be on their way
					return
				}
			}
			t.Fatalf("%v after the channel was bound with a %v lifetime the peer's datagrams still arrive on it", lifetime+3*time.Second, lifetime)
		}, true)
}

// TestKernelStopsAtAllocationDelete: Refresh with lifetime 0 ends the
// allocation, and with it the kernel entries of its channel.
func TestKernelStopsAtAllocationDelete(t *testing.T) {
	kernelStopCase(t, nil, func(srv *kernelServer, ch *kernelChannel) {
		if code := ch.c.Refresh(0); code != 0 {
			t.Fatalf("Refresh lifetime 0: error %d", code)
		}
	}, false)
}

// TestKernelStopsAtReloadDenial: a reload that denies the peer
// (peers.denied, and the peer's range no longer in peers.allowed) removes
// the channel to it from the kernel as it applies.
func TestKernelStopsAtReloadDenial(t *testing.T) {
	kernelStopCase(t, nil, func(srv *kernelServer, ch *kernelChannel) {
		cfg := srv.cfg
		cfg.Peers.Allowed = []string{"2001:db8::/32"}
		cfg.Peers.Denied = []string{kPeer4 + "/32"}
		srv.reload(t, cfg)
		if !srv.hasLog("reload: live permissions and channels to peers now denied removed") {
			t.Fatalf("the reload did not remove the channel to the denied peer")
		}
	}, false)
}

// TestKernelStopsAtRevocation: a reload that revokes the user
// (auth.revoked_users with disconnect_on_revoke) ends their allocations,
// and the kernel entries of their channels with them.
func TestKernelStopsAtRevocation(t *testing.T) {
	kernelStopCase(t, nil, func(srv *kernelServer, ch *kernelChannel) {
		cfg := srv.cfg
		cfg.Auth.RevokedUsers = []string{"demo"}
		cfg.Auth.DisconnectOnRevoke = true
		srv.reload(t, cfg)
		if recs := srv.usageRecords("udp", ""); len(recs) != 1 {
			t.Fatalf("%d usage records after the reload revoked the user, want the channel's allocation's", len(recs))
		}
	}, false)
}

// TestKernelStopsAtDisconnect: `turnd disconnect --user` ends the user's
// allocations, and the kernel entries of their channels with them.
func TestKernelStopsAtDisconnect(t *testing.T) {
	kernelStopCase(t, nil, func(srv *kernelServer, ch *kernelChannel) {
		if code, out := srv.disconnect(t, "demo"); code != 0 || !strings.Contains(out, "disconnected 1 allocation") {
			t.Fatalf("turnd disconnect --user demo: exit %d: %s", code, out)
		}
	}, false)
}
