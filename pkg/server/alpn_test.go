package server_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/turnd/turnd/internal/testproxy"
)

// TestALPNRouting: behind a proxy that routes a shared port by ALPN (as
// nginx ssl_preread does), a client offering "stun.turn" reaches turnd,
// which confirms the protocol (RFC 7443), and an HTTPS client reaches the
// web server on the same port.
func TestALPNRouting(t *testing.T) {
	certFile, keyFile := writeCert(t, t.TempDir(), 1)
	opts := testOptions()
	opts.Config.Listen.TLS = []string{"127.0.0.1:0"}
	opts.Config.TLS.CertFile, opts.Config.TLS.KeyFile = certFile, keyFile
	s := start(t, opts)

	web := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "web")
	}))
	web.EnableHTTP2 = true
	web.StartTLS()
	t.Cleanup(web.Close)
	proxy := testproxy.ALPNRouter(t, map[string]string{"stun.turn": s.TLSAddrs()[0].String()}, web.Listener.Addr().String())

	conn, err := tls.Dial("tcp", proxy, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"stun.turn"}}) //nolint:gosec // self-signed test certificate
	if err != nil {
		t.Fatalf("dial turn through the proxy: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	if got := conn.ConnectionState().NegotiatedProtocol; got != "stun.turn" {
		t.Errorf("negotiated protocol %q, want stun.turn", got)
	}
	if code := allocateStream(t, conn, "demo", "demo"); code != 0 {
		t.Fatalf("allocate through the alpn proxy: error %d", code)
	}
	waitCount(t, s.Table(), 1)

	client := web.Client()
	client.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"h2", "http/1.1"}
	resp, err := client.Get("https://" + proxy + "/")
	if err != nil {
		t.Fatalf("https through the proxy: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "web" || resp.ProtoMajor != 2 {
		t.Errorf("https through the proxy: %q over HTTP/%d, want \"web\" over HTTP/2", body, resp.ProtoMajor)
	}
	client.CloseIdleConnections()
}

// TestALPNWithoutOffer: a TLS client that offers no ALPN (most TURN clients
// today) is still served.
func TestALPNWithoutOffer(t *testing.T) {
	certFile, keyFile := writeCert(t, t.TempDir(), 1)
	opts := testOptions()
	opts.Config.Listen.TLS = []string{"127.0.0.1:0"}
	opts.Config.TLS.CertFile, opts.Config.TLS.KeyFile = certFile, keyFile
	s := start(t, opts)
	conn, _ := dialTLS(t, s.TLSAddrs()[0].String())
	if got := conn.ConnectionState().NegotiatedProtocol; got != "" {
		t.Errorf("negotiated protocol %q with no offer", got)
	}
	if code := allocateStream(t, conn, "demo", "demo"); code != 0 {
		t.Fatalf("allocate without alpn: error %d", code)
	}
}
