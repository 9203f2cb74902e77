package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// TestUnverifiedRequestsAlwaysCharged: whatever an Allocate carries in place
// of valid credentials — MESSAGE-INTEGRITY-SHA256, a junk MESSAGE-INTEGRITY
// with no NONCE, a bogus one or a real one — and whatever pion answers
// (400, 401, 438), a flood of 300 from one host gets at most the burst of
// limits.unauthenticated_rate answered. A request with a wrong FINGERPRINT
// is never answered (RFC 8489 §6.3), is counted, and spends the same tokens.
func TestUnverifiedRequestsAlwaysCharged(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.UnauthenticatedRate = 50 // burst 100
	srv := start(t, cfg)
	server := udpAddr(t, srv.UDP)

	// A real nonce, from the 401 to an unauthenticated Allocate of a host
	// that plays no further part.
	nonce := func() stun.Nonce {
		c := dialFromHost(t, 40, server)
		resp := roundTrip(t, c, stunMsg(t, stun.NewType(stun.MethodAllocate, stun.ClassRequest), requestedUDP()))
		var n stun.Nonce
		if err := n.GetFrom(resp); err != nil {
			t.Fatalf("no NONCE in the answer to an unauthenticated Allocate: %v", err)
		}
		return n
	}()
	allocate := stun.NewType(stun.MethodAllocate, stun.ClassRequest)
	junk := stun.MessageIntegrity([]byte("junk"))
	variants := []struct {
		name   string
		attrs  []stun.Setter
		answer bool // within the burst, pion answers
	}{
		{"MESSAGE-INTEGRITY-SHA256", []stun.Setter{allocate, requestedUDP(), stun.NewUsername("demo"), stun.NewRealm(cfg.Realm),
			stun.RawAttribute{Type: stun.AttrMessageIntegritySHA256, Value: make([]byte, 32)}, stun.Fingerprint}, true},
		{"junk MESSAGE-INTEGRITY, no NONCE", []stun.Setter{allocate, requestedUDP(), stun.NewUsername("demo"),
			stun.NewRealm(cfg.Realm), junk, stun.Fingerprint}, true},
		{"junk MESSAGE-INTEGRITY, bogus NONCE", []stun.Setter{allocate, requestedUDP(), stun.NewUsername("demo"),
			stun.NewRealm(cfg.Realm), stun.NewNonce("bogus"), junk, stun.Fingerprint}, true},
		{"junk MESSAGE-INTEGRITY, real NONCE", []stun.Setter{allocate, requestedUDP(), stun.NewUsername("demo"),
			stun.NewRealm(cfg.Realm), nonce, junk, stun.Fingerprint}, true},
		{"unknown user, real NONCE", []stun.Setter{allocate, requestedUDP(), stun.NewUsername("mallory"),
			stun.NewRealm(cfg.Realm), nonce, junk, stun.Fingerprint}, true},
		{"wrong FINGERPRINT", []stun.Setter{allocate, requestedUDP(), badFingerprint{}}, false},
	}
	const sent = 300
	for i, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			c := dialFromHost(t, byte(50+i), server)
			dropsBefore := udpDrops(t, server.Port)
			began := time.Now()
			for range sent {
				if _, err := c.Write(stunMsg(t, v.attrs...).Raw); err != nil {
					t.Fatal(err)
				}
			}
			// Then plain Bindings: answered only if the flood left tokens.
			for range 20 {
				if _, err := c.Write(stunMsg(t, stun.BindingRequest).Raw); err != nil {
					t.Fatal(err)
				}
			}
			// Every answered request was charged before its answer came
			// back, so what refilled at 50/s up to the last answer bounds
			// the answers however slowly a loaded server works its queue.
			answered, last := countAnswers(c)
			limit := int(last.Sub(began).Seconds()*50) + 1
			if v.answer {
				limit += 100 // the burst
			}
			if answered > limit {
				t.Fatalf("%d of %d+20 answered, want at most %d", answered, sent, limit)
			}
			if v.answer {
				return
			}
			// Every bad FINGERPRINT is counted once the server reads it; the
			// kernel may drop some when the socket's buffer fills, and
			// /proc/net/udp counts those.
			metric := `turnd_requests_dropped_total{reason="bad_fingerprint"}`
			deadline := time.Now().Add(10 * time.Second)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				got, lost := srv.metric(metric), udpDrops(t, server.Port)-dropsBefore
				if got > sent {
					t.Fatalf("bad_fingerprint drops = %v, more than the %d sent", got, sent)
				}
				if got+float64(lost) >= sent {
					t.Logf("bad_fingerprint drops = %v, kernel drops = %d", got, lost)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("bad_fingerprint drops = %v + kernel drops %d, want %d", got, lost, sent)
				}
				<-tick.C
			}
		})
	}
}

// badFingerprint adds a FINGERPRINT attribute that does not match.
type badFingerprint struct{}

func (badFingerprint) AddTo(m *stun.Message) error {
	if err := stun.Fingerprint.AddTo(m); err != nil {
		return err
	}
	m.Raw[len(m.Raw)-1] ^= 0xFF
	return nil
}

func requestedUDP() stun.Setter {
	return stun.RawAttribute{Type: stun.AttrRequestedTransport, Value: []byte{17, 0, 0, 0}}
}

func stunMsg(t *testing.T, attrs ...stun.Setter) *stun.Message {
	t.Helper()
	m, err := stun.Build(append([]stun.Setter{stun.TransactionID}, attrs...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// dialFromHost is a UDP socket on loopback host 127.0.0.host: each host
// has its own rate-limit bucket.
func dialFromHost(t *testing.T, host byte, server *net.UDPAddr) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, host)}, server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func roundTrip(t *testing.T, c *net.UDPConn, m *stun.Message) *stun.Message {
	t.Helper()
	if _, err := c.Write(m.Raw); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1500)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	resp := &stun.Message{Raw: buf[:n]}
	if err := resp.Decode(); err != nil {
		t.Fatal(err)
	}
	return resp
}

// countAnswers reads until the socket stays quiet for half a second: the
// server answers on loopback within microseconds, so silence means no more.
// It returns how many came and when the last one did.
func countAnswers(c *net.UDPConn) (n int, last time.Time) {
	buf := make([]byte, 1500)
	last = time.Now()
	for {
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Read(buf); err != nil {
			return n, last
		}
		n++
		last = time.Now()
	}
}

// udpDrops sums the kernel's drop counters (the last column of
// /proc/net/udp) of the IPv4 UDP sockets bound to port.
func udpDrops(t *testing.T, port int) int {
	t.Helper()
	b, err := readProcNet("udp")
	if err != nil {
		t.Fatalf("read kernel UDP drops: %v", err)
	}
	want := fmt.Sprintf(":%04X", port)
	total := 0
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 13 || !strings.HasSuffix(f[1], want) {
			continue
		}
		d, err := strconv.Atoi(f[len(f)-1])
		if err != nil {
			t.Fatalf("parse /proc/net/udp line %q: %v", l, err)
		}
		total += d
	}
	return total
}
