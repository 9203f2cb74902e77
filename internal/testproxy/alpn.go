package testproxy

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"testing"
	"time"
)

// ALPNRouter starts a proxy that reads each connection's TLS ClientHello
// without terminating TLS and forwards the connection, hello included, to
// routes[proto] for the first ALPN protocol the client offers that has a
// route, or else to fallback. It returns the proxy's address.
func ALPNRouter(t testing.TB, routes map[string]string, fallback string) string {
	t.Helper()
	return serve(t, func(c net.Conn) {
		protos, hello, err := readHello(c)
		if err != nil {
			_ = c.Close()
			return
		}
		target := fallback
		for _, p := range protos {
			if a, ok := routes[p]; ok {
				target = a
				break
			}
		}
		b, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			return
		}
		if _, err := b.Write(hello); err != nil {
			_ = b.Close()
			_ = c.Close()
			return
		}
		splice(c, b)
	})
}

// readHello lets crypto/tls parse the ClientHello from c and returns the
// ALPN protocols it offers and the bytes read, which the backend must see.
func readHello(c net.Conn) ([]string, []byte, error) {
	rec := &recorder{Conn: c}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	var protos []string
	err := tls.Server(rec, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			protos = slices.Clone(h.SupportedProtos)
			return nil, errPeeked
		},
	}).Handshake()
	if !errors.Is(err, errPeeked) {
		return nil, nil, err
	}
	return protos, rec.buf.Bytes(), nil
}

// recorder keeps what is read through it and drops what is written, so the
// aborted handshake sends the client nothing (no alert).
type recorder struct {
	net.Conn
	buf bytes.Buffer
}

func (r *recorder) Read(b []byte) (int, error) {
	n, err := r.Conn.Read(b)
	r.buf.Write(b[:n])
	return n, err
}

func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
