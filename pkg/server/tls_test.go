package server_test

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/testcert"
	"github.com/turnd/turnd/internal/testturn"
)

// writeCert writes a self-signed certificate for 127.0.0.1 with the given
// serial number to dir and returns its certificate and key paths.
func writeCert(t *testing.T, dir string, serial int64) (certFile, keyFile string) {
	t.Helper()
	return testcert.New(t, serial).WriteFiles(t, dir)
}

// dialTLS connects to the server's TLS listener and returns the connection
// and the serial number of the certificate it was shown.
func dialTLS(t *testing.T, addr string) (*tls.Conn, int64) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // self-signed test certificate
	if err != nil {
		t.Fatalf("tls dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// allocateStream allocates over a stream connection testturn cannot dial
// (TLS) with the long-term credential exchange, and returns the error code.
func allocateStream(t *testing.T, conn net.Conn, user, pass string) int {
	t.Helper()
	roundTrip := func(setters ...stun.Setter) *stun.Message {
		base := []stun.Setter{stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest), testturn.UDPTransport}
		req, err := stun.Build(append(append(base, setters...), stun.Fingerprint)...)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(waitTimeout))
		if _, err := conn.Write(req.Raw); err != nil {
			t.Fatalf("write: %v", err)
		}
		hdr := make([]byte, 20)
		if _, err := io.ReadFull(conn, hdr); err != nil {
			t.Fatalf("read: %v", err)
		}
		body := make([]byte, binary.BigEndian.Uint16(hdr[2:4]))
		if _, err := io.ReadFull(conn, body); err != nil {
			t.Fatalf("read: %v", err)
		}
		m := &stun.Message{Raw: append(hdr, body...)}
		if err := m.Decode(); err != nil {
			t.Fatalf("decode: %v", err)
		}
		return m
	}
	challenge := roundTrip()
	var nonce stun.Nonce
	var realm stun.Realm
	if nonce.GetFrom(challenge) != nil || realm.GetFrom(challenge) != nil {
		t.Fatalf("unsigned allocate: code %d without nonce and realm", testturn.ErrorCode(challenge))
	}
	key := auth.LongTermKey(user, realm.String(), pass)
	return testturn.ErrorCode(roundTrip(stun.NewUsername(user), realm, nonce, stun.MessageIntegrity(key)))
}

// TestTLS: allocations over TLS are told from TCP ones; a reload swaps the
// certificate for new handshakes, and a reload with an unreadable
// certificate changes nothing.
func TestTLS(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	certA, keyA := writeCert(t, dirA, 1)
	certB, keyB := writeCert(t, dirB, 2)
	obs := &fakeObserver{}
	opts := testOptions()
	opts.Observer = obs
	opts.Config.Listen.TLS = []string{"127.0.0.1:0"}
	opts.Config.TLS.CertFile, opts.Config.TLS.KeyFile = certA, keyA
	s := start(t, opts)
	if len(s.TLSAddrs()) != 1 {
		t.Fatalf("TLSAddrs: %v, want one", s.TLSAddrs())
	}
	addr := s.TLSAddrs()[0].String()

	conn, serial := dialTLS(t, addr)
	if serial != 1 {
		t.Fatalf("certificate serial %d, want 1", serial)
	}
	if code := allocateStream(t, conn, "demo", "demo"); code != 0 {
		t.Fatalf("allocate over tls: error %d", code)
	}
	dial(t, s, "tcp").MustAllocate()
	waitCount(t, s.Table(), 2)
	wantByTransport(t, s.Table(), 0, 1, 1)

	next := s.Config()
	next.TLS.CertFile, next.TLS.KeyFile = certB, keyB
	if _, err := s.Reload(next); err != nil {
		t.Fatalf("reload with a new certificate: %v", err)
	}
	if _, serial := dialTLS(t, addr); serial != 2 {
		t.Errorf("certificate serial after reload %d, want 2", serial)
	}

	broken := s.Config()
	broken.TLS.CertFile = filepath.Join(t.TempDir(), "missing.pem")
	broken.Auth.Users = map[string]string{"alice": "wonderland"}
	if _, err := s.Reload(broken); err == nil || !strings.Contains(err.Error(), "load tls certificate") {
		t.Fatalf("reload with a missing certificate: err = %v", err)
	}
	if _, serial := dialTLS(t, addr); serial != 2 {
		t.Errorf("certificate serial after a failed reload %d, want 2", serial)
	}
	if got := s.Config().TLS.CertFile; got != certB {
		t.Errorf("tls.cert_file after a failed reload %q, want %q", got, certB)
	}

	// Closing the TLS connection ends its allocation.
	conn.Close()
	waitCount(t, s.Table(), 1)
	wantByTransport(t, s.Table(), 0, 1, 0)
}
