package server_test

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/server"
)

// noAnswer is a rule's expectation that the server stays silent.
const noAnswer = -1

// rule is one row of the conformance table: what a client sends, what the
// server must answer, and where the RFC says so. A row is small data so that
// a new rule is one more entry.
type rule struct {
	section string   // the RFC and section that state the rule
	name    string   // the rule, in a few words
	nets    []string // client transports the rule holds over
	// send makes the row's request (after any setup of its own) and returns
	// the response, or nil when the server did not answer (testturn's Ask).
	send func(t *testing.T, e *ruleEnv) *stun.Message
	want int // ERROR-CODE, 0 for a success response, or noAnswer
	// check, if set, asserts more about the response.
	check func(t *testing.T, e *ruleEnv, resp *stun.Message)
}

// ruleEnv is what a row works with: a fresh server, a client of it signed
// in as demo, and a UDP echo peer.
type ruleEnv struct {
	s    *server.Server
	net  string
	c    *testturn.Client
	peer *net.UDPAddr
}

var (
	both    = []string{"udp", "tcp"}
	tcpOnly = []string{"tcp"}
	udpOnly = []string{"udp"}
)

// TestConformance holds turnd to the rules of RFC 8656 (TURN), RFC 8489
// (STUN) and RFC 6062 (TURN over TCP) that clients rely on, each row over
// each client transport it applies to, against a fresh server.
func TestConformance(t *testing.T) {
	for _, r := range conformanceRules() {
		for _, network := range r.nets {
			t.Run(r.section+" "+r.name+" "+network, func(t *testing.T) {
				s := start(t, server.Options{Config: conformanceConfig()})
				e := &ruleEnv{s: s, net: network, c: dial(t, s, network), peer: echoPeer(t)}
				resp := r.send(t, e)
				switch {
				case r.want == noAnswer && resp != nil:
					t.Fatalf("answered %v (code %d), want no answer", resp.Type, testturn.ErrorCode(resp))
				case r.want == noAnswer:
					return
				case resp == nil:
					t.Fatalf("no answer, want code %d", r.want)
				}
				if got := testturn.ErrorCode(resp); got != r.want {
					t.Fatalf("code %d, want %d", got, r.want)
				}
				if r.check != nil {
					r.check(t, e, resp)
				}
			})
		}
	}
}

// conformanceConfig is testConfig with a second user, who must not touch
// demo's allocation, and a lifetime cap pion grants as asked.
func conformanceConfig() config.Config {
	cfg := testConfig()
	cfg.Auth.Users = map[string]string{"demo": "demo", "other": "other"}
	cfg.Limits.MaxLifetime = 30 * time.Minute
	return cfg
}

// allocate gives the row's client an allocation, UDP or (tcp true) an RFC 6062 TCP one.
func (e *ruleEnv) allocate(t *testing.T, tcp bool) {
	t.Helper()
	transport := testturn.UDPTransport
	if tcp {
		transport = testturn.RawAttr(stun.AttrRequestedTransport, []byte{6, 0, 0, 0})
	}
	if code := testturn.ErrorCode(e.c.Request(stun.MethodAllocate, transport)); code != 0 {
		t.Fatalf("allocate: error %d", code)
	}
}

// other is the row's client signing as the second user.
func (e *ruleEnv) other() *testturn.Client { return e.c.As("other", "other") }

// channel is a CHANNEL-NUMBER attribute.
func channel(number uint16) stun.Setter {
	v := make([]byte, 4)
	binary.BigEndian.PutUint16(v, number)
	return testturn.RawAttr(stun.AttrChannelNumber, v)
}

// family is a REQUESTED-ADDRESS-FAMILY attribute (1 IPv4, 2 IPv6).
func family(f byte) stun.Setter {
	return testturn.RawAttr(stun.AttrRequestedAddressFamily, []byte{f, 0, 0, 0})
}

// lifetimeIs checks a response's LIFETIME.
func lifetimeIs(want time.Duration) func(*testing.T, *ruleEnv, *stun.Message) {
	return func(t *testing.T, _ *ruleEnv, resp *stun.Message) {
		t.Helper()
		if got := testturn.LifetimeOf(t, resp); got != want {
			t.Errorf("LIFETIME %v, want %v", got, want)
		}
	}
}

// realmAndNonce checks that an error response tells the client how to sign.
func realmAndNonce(t *testing.T, _ *ruleEnv, resp *stun.Message) {
	t.Helper()
	if !resp.Contains(stun.AttrRealm) || !resp.Contains(stun.AttrNonce) {
		t.Errorf("%d without REALM and NONCE", testturn.ErrorCode(resp))
	}
}

// signedByOther checks that an answer to the second user is signed with that user's key.
func signedByOther(t *testing.T, e *ruleEnv, resp *stun.Message) {
	t.Helper()
	if !e.other().Signed(resp) {
		t.Error("answer not signed with the requester's key")
	}
}

// tcpPeer runs a TCP listener on 127.0.0.1 that accepts and holds
// connections until the test ends, as a peer of RFC 6062 Connect.
func tcpPeer(t *testing.T) *net.UDPAddr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen tcp peer: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	a := ln.Addr().(*net.TCPAddr)
	return &net.UDPAddr{IP: a.IP, Port: a.Port}
}
