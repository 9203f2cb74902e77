package server_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// TestSharedPort: one listen.tcp_tls address serves a plain TCP client and a
// TLS client, each counted under its own transport, while a third client
// that connected first and says nothing holds up neither.
func TestSharedPort(t *testing.T) {
	certFile, keyFile := writeCert(t, t.TempDir(), 1)
	opts := testOptions()
	opts.Config.Listen.TCP = nil
	opts.Config.Listen.TCPTLS = []string{"127.0.0.1:0"}
	opts.Config.TLS.CertFile, opts.Config.TLS.KeyFile = certFile, keyFile
	s := start(t, opts)
	addr := tcpAddr(t, s)
	if tlsAddrs := s.TLSAddrs(); len(tlsAddrs) != 1 || tlsAddrs[0].String() != addr {
		t.Fatalf("TLSAddrs %v, want [%s] (the shared port)", tlsAddrs, addr)
	}

	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { silent.Close() })

	// Bounded: were the silent client's first byte awaited before the
	// next accept, this handshake would wait for its timeout.
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // self-signed test certificate
	if err != nil {
		t.Fatalf("tls dial behind a silent client: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	if got := conn.ConnectionState().NegotiatedProtocol; got != "" {
		t.Errorf("negotiated protocol %q with no offer", got)
	}
	if code := allocateStream(t, conn, "demo", "demo"); code != 0 {
		t.Fatalf("allocate over tls on the shared port: error %d", code)
	}
	c := dial(t, s, "tcp")
	c.MustAllocate()
	peer := echoPeer(t)
	mustPermit(t, c, peer)
	mustEcho(t, c, peer, "plain tcp on the shared port")
	waitCount(t, s.Table(), 2)
	wantByTransport(t, s.Table(), 0, 1, 1)
}
