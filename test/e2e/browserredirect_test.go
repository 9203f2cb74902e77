package e2e

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testcert"
	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/config"
)

// Addresses of the two turnd "hosts" inside the test's namespace: a private
// range that exists only there. Chromium does not follow a 300 to loopback.
const (
	hostA = "10.213.47.1"
	hostB = "10.213.47.2"
)

// TestBrowserRedirect: a new call during a drain with an alternate gets its
// relay candidates from the alternate, over UDP; a relay over TCP and over
// TLS is gathered from it too. Chromium, turnd A (draining, with B as its
// alternate) and turnd B run in a network namespace made by the test.
func TestBrowserRedirect(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium not installed: scripts/install-test-tools.sh installs Debian's chromium package")
	}
	requireNetns(t)
	ns := addBrowserNetns(t)

	// One certificate for both, trusted by its key: the browser checks the
	// key, whatever name or address it is presented for. Like a fleet, A and
	// B listen on the same TLS port: a 300 over TLS names that port.
	cert := testcert.New(t, 1)
	certFile, keyFile := cert.WriteFiles(t, t.TempDir())
	tlsPort := strconv.Itoa(testturn.FreeTCPPort(t))
	configure := func(host string) config.Config {
		cfg := testConfig()
		cfg.Listen.UDP, cfg.Listen.TCP = []string{host + ":0"}, []string{host + ":0"}
		cfg.Listen.TLS, cfg.HTTP.Address = []string{host + ":" + tlsPort}, ""
		cfg.TLS.CertFile, cfg.TLS.KeyFile = certFile, keyFile
		return cfg
	}
	// B's UDP and TCP listeners share a port number: ALTERNATE-SERVER names
	// one port for both.
	cfgB := configure(hostB)
	port := strconv.Itoa(testturn.FreeTCPPort(t))
	cfgB.Listen.UDP, cfgB.Listen.TCP = []string{hostB + ":" + port}, []string{hostB + ":" + port}
	b := startIn(t, ns, cfgB)
	cfgA := configure(hostA)
	cfgA.Drain.AlternateServers = []string{b.UDP}
	cfgA.Drain.AlternateDomain = "turn-b.turnd.test"
	a := startIn(t, ns, cfgA)

	// An allocation on A keeps its drain going.
	var holder *testturn.Client
	if err := ns.do(func() error { holder = testturn.Dial(t, "udp", a.UDP, "demo", "demo"); return nil }); err != nil {
		t.Fatal(err)
	}
	holder.MustAllocate()
	a.signal(syscall.SIGTERM)
	a.waitLog("drain started", 5*time.Second)

	br := newBrowserIn(t, ns, spkiHash(t, cert.DER))
	p := br.startCall(demoServer("turn:" + a.UDP + "?transport=udp"))
	t.Logf("pair %s:%d <-> %s:%d", p.Local.Address, p.Local.Port, p.Remote.Address, p.Remote.Port)
	if p.Local.Address != hostB || p.Remote.Address != hostB {
		t.Errorf("relay candidates %s and %s, want both from the alternate %s", p.Local.Address, p.Remote.Address, hostB)
	}
	r := br.burst(burstMessages, burstGap)
	t.Logf("%d of %d messages echoed through the alternate", r.Echoed, r.Sent)
	if r.Echoed != r.Sent || r.Sent != burstMessages {
		t.Errorf("%d of %d messages echoed, want every one", r.Echoed, r.Sent)
	}
	if n := strings.Count(a.logText(), `"msg":"allocation created"`); n != 1 {
		t.Errorf("A created %d allocations, want only the holder's made before its drain", n)
	}
	if n := strings.Count(b.logText(), `"msg":"allocation created"`); n != 2 {
		t.Errorf("B created %d allocations, want the call's 2", n)
	}

	for _, url := range []string{"turn:" + a.TCP + "?transport=tcp", "turns:" + a.TLS + "?transport=tcp"} {
		var g gathered
		br.eval(call("gather", demoServer(url)), &g)
		t.Logf("%s: relay candidates %v, errors %+v", url, g.Candidates, g.Errors)
		if len(g.Candidates) != 1 || g.Candidates[0] != hostB {
			t.Errorf("%s: relay candidates %v (errors %+v), want one from the alternate %s", url, g.Candidates, g.Errors, hostB)
		}
	}
	if n := strings.Count(b.logText(), `"msg":"allocation created"`); n != 4 {
		t.Errorf("B created %d allocations, want 4 (the call's 2, then one over TCP and one over TLS)", n)
	}
}

// addBrowserNetns makes a namespace with loopback and a veth pair whose
// ends carry hostA and hostB.
func addBrowserNetns(t *testing.T) netns {
	t.Helper()
	ns := addNetns(t, "turnd-browser")
	// Both ends stay in the namespace: its names never touch the host's.
	ns.ip(t, "link", "add", "tb0", "type", "veth", "peer", "name", "tb1")
	for dev, addr := range map[string]string{"tb0": hostA + "/24", "tb1": hostB + "/24"} {
		ns.ip(t, "addr", "add", addr, "dev", dev)
		ns.ip(t, "link", "set", dev, "up")
	}
	return ns
}

// newBrowserIn starts Chromium inside the namespace on a page served there.
func newBrowserIn(t *testing.T, ns netns, trustSPKI string) *browser {
	t.Helper()
	var ln net.Listener
	if err := ns.do(func() (err error) { ln, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(callPage))
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return launchBrowser(t, srv.URL, trustSPKI, []string{"ip", "netns", "exec", string(ns)})
}
