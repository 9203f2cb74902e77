package e2e

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testproxy"
	"github.com/turnd/turnd/internal/testturn"
)

// TestUpgradeSharedPortAndProxiedTCP: on a shared TCP/TLS port the plain
// TCP client moves and the TLS one stays; a TCP client behind a PROXY-v2
// proxy moves with the 5-tuple its header named, so its nonce and
// allocation match on the new process; every one relays on.
func TestUpgradeSharedPortAndProxiedTCP(t *testing.T) {
	cfg := upgradeConfig(t)
	clientTLS := withFixedTLS(t, &cfg)
	shared := cfg.Listen.TCP[0]
	proxied := net.JoinHostPort("127.0.0.1", strconv.Itoa(testturn.FreeTCPPort(t)))
	cfg.Listen.TLS = nil
	cfg.Listen.TCPTLS = []string{shared}
	cfg.Listen.TCP = []string{proxied}
	cfg.Listen.ProxyProtocol.Listeners = []string{proxied}
	cfg.Listen.ProxyProtocol.Trusted = []string{"127.0.0.1/32"}
	l := startUpgradable(t, writeConfig(t, cfg))
	proxy := testproxy.PROXY(t, proxied, 2)
	peer := echoPeer(t)

	plain := testturn.Dial(t, "tcp", shared, "demo", "demo")
	secure := testturn.DialTLS(t, shared, clientTLS, "demo", "demo")
	behind := testturn.DialFrom(t, "tcp", "127.0.0.7", proxy, "demo", "demo")
	clients := map[string]*testturn.Client{"plain TCP on the shared port": plain, "TLS on the shared port": secure,
		"TCP behind the proxy": behind}
	for _, c := range clients {
		relayed(t, c, peer)
	}

	old := l.serving()
	next := l.upgrade()
	l.handedOver(0, next, 2, 1)
	requireOwner(t, "the shared listener", "tcp", shared, "0.0.0.0:0", next, old, next)
	requireOwner(t, "the plain TCP client's connection", "tcp", shared, plain.LocalAddr().String(), next, old, next)
	requireOwner(t, "the TLS client's connection", "tcp", shared, secure.LocalAddr().String(), old, old, next)
	for name, c := range clients {
		if code := c.Refresh(10 * time.Minute); code != 0 {
			t.Errorf("%s: refresh after the upgrade: error %d", name, code)
		}
		if !c.Echo(peer, name+" after the upgrade") {
			t.Errorf("%s: no echo after the upgrade", name)
		}
	}
	if code := secure.Refresh(0); code != 0 {
		t.Fatalf("TLS release: %d", code)
	}
	if code := old.waitGone(t, 10*time.Second, l.log); code != 0 {
		t.Errorf("the old turnd exited %d once its TLS client left, want 0", code)
	}
	relayed(t, testturn.DialTLS(t, shared, clientTLS, "demo", "demo"), peer)
}
