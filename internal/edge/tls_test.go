package edge_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/testcert"
)

// selfSigned returns a server certificate for 127.0.0.1 and a client
// configuration that trusts it.
func selfSigned(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	c := testcert.New(t, 1)
	return c.ServerConfig(), c.ClientConfig()
}

// tlsPair accepts one TLS connection through edge.Listener; the client side
// is a raw TCP connection when raw, else a TLS client that handshakes on
// its first write.
func tlsPair(t *testing.T, g *gate.Gate, timeout time.Duration, raw bool) (server, client net.Conn) {
	t.Helper()
	serverCfg, clientCfg := selfSigned(t)
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen tcp: %v", err)
	}
	ln := edge.New(g, nil).Listener(tls.NewListener(inner, serverCfg), timeout, nil)
	return acceptPair(t, ln, func() (net.Conn, error) {
		c, err := net.Dial("tcp4", inner.Addr().String())
		if err != nil || raw {
			return c, err
		}
		return tls.Client(c, clientCfg), nil
	})
}

// TestTLSHandshakeTimeout: a client that connects and never completes the
// handshake is cut after the handshake timeout, not held forever.
func TestTLSHandshakeTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	tests := []struct {
		name  string
		sends []byte
	}{
		{"silent client", nil},
		{"half a ClientHello", []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}},
		{"STUN instead of TLS", channelData([]byte("x"), true)[:2]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server, client := tlsPair(t, gate.New(strictPolicy(), gate.Hooks{}), timeout, true)
			if _, err := client.Write(tc.sends); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			n, err := server.Read(make([]byte, 1600))
			took := time.Since(start)
			if err == nil || n != 0 {
				t.Fatalf("Read = (%d, %v), want an error", n, err)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Read error %v, want the handshake deadline", err)
			}
			if took > timeout+2*time.Second {
				t.Errorf("cut after %v, want about %v", took, timeout)
			}
			// The client sees its connection closed.
			if _, err := client.Read(make([]byte, 16)); err == nil {
				t.Error("client connection still open")
			}
		})
	}
}

// TestTLSStream checks that over TLS the gate frames and answers as over TCP.
func TestTLSStream(t *testing.T) {
	server, client := tlsPair(t, gate.New(strictPolicy(), gate.Hooks{Accepting: func() bool { return false }}), time.Second, false)
	cd := channelData([]byte("over tls"), true)
	binding := request(t, stun.MethodBinding, testUser, nil, true)
	writeChunks(t, client, slices.Concat(cd, aliceAllocate(t), binding, cd), 5)

	want := slices.Concat(cd, binding, cd)
	if out := readN(t, server, len(want), 1600); !bytes.Equal(out, want) {
		t.Errorf("pion read %x, want %x", out, want)
	}
	hdr := readN(t, client, 20, 20)
	reply := decode(t, append(hdr, readN(t, client, int(hdr[2])<<8|int(hdr[3]), 1600)...))
	checkSigned(t, reply, aliceKey())
	if code := errorCode(t, reply); code != stun.CodeTryAlternate {
		t.Errorf("client got %d, want 300", code)
	}
}

// TestRedirectOverTLS: a 300 sent over TLS names the alternate's address
// with this listener's TLS port and carries ALTERNATE-DOMAIN (RFC 8489
// §14.16); over plain TCP it names the listed port and no domain.
func TestRedirectOverTLS(t *testing.T) {
	for _, overTLS := range []bool{true, false} {
		p := strictPolicy() // alternate 127.0.0.9:3478
		p.AlternateDomain = "turn.example.org"
		g := gate.New(p, gate.Hooks{Accepting: func() bool { return false }})
		var server, client net.Conn
		if overTLS {
			server, client = tlsPair(t, g, time.Second, false)
		} else {
			server, client = streamPair(t, g)
		}
		binding := request(t, stun.MethodBinding, testUser, nil, true)
		first := request(t, stun.MethodAllocate, testUser, nil, true, transport(17))
		writeChunks(t, client, slices.Concat(first, binding), 1<<20)
		if out := readN(t, server, len(binding), 1600); !bytes.Equal(out, binding) {
			t.Fatalf("tls %v: pion read %x, want the Binding only", overTLS, out)
		}
		hdr := readN(t, client, 20, 20)
		reply := decode(t, append(hdr, readN(t, client, int(hdr[2])<<8|int(hdr[3]), 1600)...))
		if code := errorCode(t, reply); code != stun.CodeTryAlternate || reply.Contains(stun.AttrNonce) {
			t.Fatalf("tls %v: reply %v, want an unsigned 300", overTLS, reply)
		}
		var alt stun.AlternateServer
		if err := alt.GetFrom(reply); err != nil {
			t.Fatal(err)
		}
		wantPort := 3478
		if overTLS {
			wantPort = server.LocalAddr().(*net.TCPAddr).Port
		}
		if !alt.IP.Equal(net.IPv4(127, 0, 0, 9)) || alt.Port != wantPort {
			t.Errorf("tls %v: ALTERNATE-SERVER %s:%d, want 127.0.0.9:%d", overTLS, alt.IP, alt.Port, wantPort)
		}
		domain, err := reply.Get(stun.AttrAlternateDomain)
		if overTLS && (err != nil || string(domain) != "turn.example.org") {
			t.Errorf("over TLS: ALTERNATE-DOMAIN %q (%v), want turn.example.org", domain, err)
		}
		if !overTLS && err == nil {
			t.Errorf("over TCP: ALTERNATE-DOMAIN %q sent", domain)
		}
	}
}
