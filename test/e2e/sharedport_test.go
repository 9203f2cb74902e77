package e2e

import (
	"strconv"
	"testing"
)

// TestSharedPortUclient: coturn's uclient over plain TCP and over TLS
// reaches turnd on one listen.tcp_tls port, and relays every message.
func TestSharedPortUclient(t *testing.T) {
	certFile, keyFile := selfSigned(t)
	cfg := testConfig()
	cfg.Listen.TCP = nil
	cfg.Listen.TCPTLS = []string{"127.0.0.1:0"}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = certFile, keyFile
	srv := start(t, cfg)
	if srv.TCP == "" || srv.TCP != srv.TLS {
		t.Fatalf("serving line: tcp %q, tls %q; want the shared port in both", srv.TCP, srv.TLS)
	}
	peer := strconv.Itoa(startPeer(t))

	const m, n = 2, 50
	base := []string{"-u", "demo", "-w", "demo", "-e", "127.0.0.1", "-r", peer, "-X", "-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-l", "120"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"tcp", []string{"-t"}},
		{"tls", []string{"-t", "-S"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireZeroLoss(t, uclient(t, uclientTimeout, srv.TCP, append(tc.args, base...)...), m*n)
			if v := srv.metric(`turnd_allocations_created_total{transport="` + tc.name + `"}`); v == 0 {
				t.Errorf("no allocation counted as %s", tc.name)
			}
		})
	}
}
