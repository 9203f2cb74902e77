package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/turnd/turnd/internal/testproxy"
	"github.com/turnd/turnd/internal/testturn"
)

// TestProxyProtocolV2: coturn's uclient over TCP and over TLS, from
// 127.0.0.7, reaches turnd through a PROXY-v2 proxy on 127.0.0.1 and
// relays every message; turnd logs its allocations under 127.0.0.7, answers
// a Binding with it, counts its live allocation in /status and lists it
// under 127.0.0.7 in /sessions; a header
// sent from an untrusted address is refused and counted.
func TestProxyProtocolV2(t *testing.T) {
	certFile, keyFile := selfSigned(t)
	cfg := testConfig()
	cfg.Listen.TLS = []string{"127.0.0.1:0"}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = certFile, keyFile
	cfg.Listen.ProxyProtocol.Listeners = []string{"127.0.0.1:0"}
	cfg.Listen.ProxyProtocol.Trusted = []string{"127.0.0.1/32"}
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tokenFile, []byte("e2e-proxy-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.HTTP.AdminTokenFile = tokenFile
	srv := start(t, cfg)
	tcpProxy := testproxy.PROXY(t, srv.TCP, 2)
	tlsProxy := testproxy.PROXY(t, srv.TLS, 2)
	peer := strconv.Itoa(startPeer(t))

	const m, n = 2, 50
	base := []string{"-L", "127.0.0.7", "-u", "demo", "-w", "demo", "-e", "127.0.0.1", "-r", peer, "-X",
		"-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-l", "120"}
	for _, tc := range []struct {
		name, proxy string
		args        []string
	}{
		{"tcp", tcpProxy, []string{"-t"}},
		{"tls", tlsProxy, []string{"-t", "-S"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireZeroLoss(t, uclient(t, uclientTimeout, tc.proxy, append(tc.args, base...)...), m*n)
		})
	}
	created := 0
	for _, l := range srv.allLogs("allocation created") {
		created++
		if c, _ := l["client"].(string); !strings.HasPrefix(c, "127.0.0.7:") {
			t.Errorf("allocation created for client %q, want 127.0.0.7 (the client behind the proxy)", c)
		}
	}
	if created == 0 {
		t.Fatal("no allocation logged")
	}

	c := testturn.DialFrom(t, "tcp", "127.0.0.7", tcpProxy, "demo", "demo")
	if got := c.BindingMapped(); !got.IP.Equal(net.ParseIP("127.0.0.7")) {
		t.Errorf("XOR-MAPPED-ADDRESS through the proxy %v, want 127.0.0.7", got)
	}
	c.MustAllocate()
	if tcp := srv.status()["allocations"].(map[string]any)["by_transport"].(map[string]any)["tcp"]; tcp != float64(1) {
		t.Errorf("/status tcp allocations %v, want 1", tcp)
	}
	code, out := runTurnd(t, "sessions", "--http", srv.HTTP, "--token-file", tokenFile, "--json")
	if code != 0 || !strings.Contains(out, `"client": "127.0.0.7:`) {
		t.Errorf("turnd sessions through the proxy: exit %d, want the client 127.0.0.7:\n%s", code, out)
	}

	// A client pretending to be a proxy.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.7")}}
	fake, err := d.Dial("tcp", srv.TCP)
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	h := proxyproto.HeaderProxyFromAddrs(2, &net.TCPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1}, fake.RemoteAddr())
	if _, err := h.WriteTo(fake); err != nil {
		t.Fatal(err)
	}
	_ = fake.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := fake.Read(make([]byte, 1)); err == nil {
		t.Error("a header from an untrusted address was not refused")
	}
	if v := srv.metric(`turnd_proxy_protocol_refused_total{reason="untrusted"}`); v != 1 {
		t.Errorf("untrusted refusals counted %v, want 1", v)
	}
}

// allLogs returns the log lines so far whose msg contains substr.
func (p *turnd) allLogs(substr string) []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, l := range p.lines {
		if msg, _ := l["msg"].(string); strings.Contains(msg, substr) {
			out = append(out, l)
		}
	}
	return out
}
