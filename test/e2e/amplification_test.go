package e2e

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/testturn"
)

// maxAmplification bounds response bytes / request bytes for what anyone can
// send without credentials. A spoofed source turns each reply into traffic
// at a victim; DNS and NTP reflectors reach 28-556x. The worst case here
// is a 72-byte 401 (ERROR-CODE, NONCE, REALM) to a bare 20-byte Allocate or
// Refresh: 3.6 with the test realm "turnd.local". The 401 grows with the
// realm (every 4 bytes of realm add 0.2), so 4 holds for realms up to 20
// bytes; an extra attribute or a second datagram would break it.
const maxAmplification = 4.0

// methodUnknown is a STUN method no TURN or STUN RFC defines.
const methodUnknown stun.Method = 0x050

// TestAmplification sends the unauthenticated requests an attacker can
// spoof over UDP, in their smallest form, and counts every byte turnd sends
// back for each (every datagram, not only the first). It checks the factor
// against maxAmplification and that no response names its software.
func TestAmplification(t *testing.T) {
	srv := start(t, testConfig())
	// IPv6 answers are larger: XOR-MAPPED-ADDRESS carries 16 address bytes.
	cfg6 := testConfig()
	cfg6.Listen.UDP, cfg6.Listen.TCP = []string{"[::1]:0"}, nil
	srv6 := start(t, cfg6)

	// A valid nonce and realm, for the request with a wrong signature.
	probe := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	challenge := probe.RoundTrip(build(t, stun.NewType(stun.MethodAllocate, stun.ClassRequest), testturn.UDPTransport))
	var nonce stun.Nonce
	var realm stun.Realm
	if nonce.GetFrom(challenge) != nil || realm.GetFrom(challenge) != nil {
		t.Fatalf("401 without NONCE and REALM (code %d)", testturn.ErrorCode(challenge))
	}

	allocate := stun.NewType(stun.MethodAllocate, stun.ClassRequest)
	refresh := stun.NewType(stun.MethodRefresh, stun.ClassRequest)
	cases := []struct {
		name string
		req  *stun.Message
		code int  // expected error code; 0 = success, -1 = no answer at all
		v6   bool // sent to the IPv6 server
	}{
		{"binding, header only", build(t, stun.BindingRequest), 0, false},
		{"binding with fingerprint", build(t, stun.BindingRequest, stun.Fingerprint), 0, false},
		{"binding over IPv6, header only", build(t, stun.BindingRequest), 0, true},
		{"binding with an unknown comprehension-required attribute", build(t, stun.BindingRequest,
			testturn.RawAttr(0x7F01, nil)), 420, false},
		{"request of an unknown method, header only", build(t, stun.NewType(methodUnknown, stun.ClassRequest)), 400, false},
		{"allocate without credentials", build(t, allocate, testturn.UDPTransport), 401, false},
		{"allocate, header only", build(t, allocate), 401, false},
		{"allocate with a bad message-integrity", build(t, allocate, testturn.UDPTransport,
			stun.NewUsername("demo"), realm, nonce,
			stun.MessageIntegrity(auth.LongTermKey("demo", realm.String(), "not the password")), stun.Fingerprint), 401, false},
		{"allocate with a stale nonce", build(t, allocate, stun.NewNonce("x"),
			stun.MessageIntegrity(auth.LongTermKey("demo", realm.String(), "demo"))), 438, false},
		{"refresh without credentials", build(t, refresh), 401, false},
		{"send indication without an allocation", build(t, stun.NewType(stun.MethodSend, stun.ClassIndication),
			testturn.PeerAddr(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}),
			testturn.RawAttr(stun.AttrData, []byte("x"))), -1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			to := srv.UDP
			if tc.v6 {
				to = srv6.UDP
			}
			first, total := reflect(t, to, tc.req, tc.code >= 0)
			if tc.code < 0 {
				if total != 0 {
					t.Fatalf("answered with %d bytes, want silence", total)
				}
				return
			}
			if code := testturn.ErrorCode(first); code != tc.code {
				t.Fatalf("answered %d, want %d", code, tc.code)
			}
			if _, err := first.Get(stun.AttrSoftware); err == nil {
				t.Error("response carries SOFTWARE")
			}
			factor := float64(total) / float64(len(tc.req.Raw))
			t.Logf("request %d B, response %d B: factor %.2f", len(tc.req.Raw), total, factor)
			if factor > maxAmplification {
				t.Errorf("amplification %.2f > %.1f (request %d B, response %d B)", factor, maxAmplification, len(tc.req.Raw), total)
			}
		})
	}
}

// TestAmplificationDraining measures the unsigned 300 a draining server
// with alternates sends to an Allocate without credentials, with an IPv6
// alternate (the larger ALTERNATE-SERVER).
func TestAmplificationDraining(t *testing.T) {
	cfg := testConfig()
	cfg.Drain.AlternateServers = []string{"[::1]:13478"}
	srv := start(t, cfg)
	holder := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	holder.MustAllocate() // keeps the drain going
	drainSignalled(t, srv, syscall.SIGTERM)
	allocate := stun.NewType(stun.MethodAllocate, stun.ClassRequest)
	for _, tc := range []struct {
		name string
		req  *stun.Message
	}{
		{"allocate without credentials", build(t, allocate, testturn.UDPTransport)},
		{"allocate, header only", build(t, allocate)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, total := reflect(t, srv.UDP, tc.req, true)
			if code := testturn.ErrorCode(first); code != 300 {
				t.Fatalf("answered %d, want 300", code)
			}
			factor := float64(total) / float64(len(tc.req.Raw))
			t.Logf("request %d B, response %d B: factor %.2f", len(tc.req.Raw), total, factor)
			if factor > maxAmplification {
				t.Errorf("amplification %.2f > %.1f (request %d B, response %d B)", factor, maxAmplification, len(tc.req.Raw), total)
			}
		})
	}
}

func build(t *testing.T, setters ...stun.Setter) *stun.Message {
	t.Helper()
	m, err := stun.Build(append([]stun.Setter{stun.TransactionID}, setters...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// reflect sends req once from a fresh socket, as a spoofed packet arrives
// once, and returns the first response and the bytes of every datagram that
// came back until 300 ms of silence. With answered, a missing response
// fails the test.
func reflect(t *testing.T, server string, req *stun.Message, answered bool) (*stun.Message, int) {
	t.Helper()
	conn, err := net.Dial("udp", server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(req.Raw); err != nil {
		t.Fatal(err)
	}
	var first *stun.Message
	total := 0
	buf := make([]byte, 2048)
	for {
		wait := 300 * time.Millisecond
		if first == nil && answered {
			wait = 2 * time.Second // the answer itself
		}
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		n, err := conn.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if first == nil {
			first = &stun.Message{Raw: append([]byte(nil), buf[:n]...)}
			if err := first.Decode(); err != nil || first.TransactionID != req.TransactionID {
				t.Fatalf("not the answer to the request: %v", err)
			}
		}
	}
	if first == nil && answered {
		t.Fatal("no answer")
	}
	return first, total
}
