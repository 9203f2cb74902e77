package server_test

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/config"
)

// TestNotAccepting is the drain's contract with the server: once Accepting
// says no, a new Allocate gets a signed 486, while an allocation made before
// keeps refreshing, permitting and relaying.
func TestNotAccepting(t *testing.T) {
	obs := &fakeObserver{}
	opts := testOptions()
	opts.Observer = obs
	s := start(t, opts)
	peer := echoPeer(t)

	old := dial(t, s, "udp")
	old.MustAllocate()
	oldTCP := dial(t, s, "tcp")
	oldTCP.MustAllocate()
	waitCount(t, s.Table(), 2)
	s.Table().StopAdmitting()

	for _, network := range []string{"udp", "tcp"} {
		c := dial(t, s, network)
		resp := c.Allocate()
		if code := testturn.ErrorCode(resp); code != 486 {
			t.Fatalf("allocate over %s while not accepting: code %d, want 486", network, code)
		}
		if !c.Signed(resp) {
			t.Errorf("486 over %s is not signed with the client's key", network)
		}
	}
	if got, want := obs.Rejected(), []string{"draining", "draining"}; !slices.Equal(got, want) {
		t.Errorf("AllocationRejected calls %q, want %q", got, want)
	}
	if n := s.Table().Count(); n != 2 {
		t.Errorf("registry holds %d allocations, want the 2 made before", n)
	}

	for name, c := range map[string]*testturn.Client{"udp": old, "tcp": oldTCP} {
		if code := c.Refresh(10 * time.Minute); code != 0 {
			t.Errorf("refresh of the %s allocation made before: error %d", name, code)
		}
		mustPermit(t, c, peer)
		mustEcho(t, c, peer, "still relaying over "+name)
	}
	if got := obs.Rejected(); len(got) != 2 {
		t.Errorf("refresh, permission or data was counted as a rejection: %q", got)
	}
}

// TestNotAcceptingRedirects: with alternates configured, a refused Allocate
// gets 300 Try Alternate naming one of them instead of 486: unsigned to the
// first leg, signed to a client that already holds a nonce.
func TestNotAcceptingRedirects(t *testing.T) {
	obs := &fakeObserver{}
	opts := testOptions()
	opts.Observer = obs
	opts.Config.Drain.AlternateServers = []string{"192.0.2.10:3478"}
	s := start(t, opts)

	c := dial(t, s, "udp")
	if code := c.Refresh(time.Minute); code != 437 { // only to learn a nonce
		t.Fatalf("refresh without an allocation: code %d, want 437", code)
	}
	s.Table().StopAdmitting()
	if alt := alternateOf(t, unauthenticatedAllocate(t, c)); alt != "192.0.2.10:3478" {
		t.Errorf("first leg redirected to %s", alt)
	}
	resp := c.Allocate()
	if code := testturn.ErrorCode(resp); code != 300 {
		t.Fatalf("allocate: code %d, want 300", code)
	}
	if !c.Signed(resp) {
		t.Error("300 is not signed with the client's key")
	}
	obs.waitRejected(t, 2)
	if got, want := obs.Rejected(), []string{"redirected", "redirected"}; !slices.Equal(got, want) {
		t.Errorf("AllocationRejected calls %q, want %q", got, want)
	}
}

// TestRefusals covers what the server refuses on its own: quotas (486),
// credentials (401), peers (403), each reported to the Observer once.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name      string
		configure func(*config.Config)
		// run returns the error code of the request that must be refused.
		run        func(t *testing.T, s *serverUnderTest) int
		wantCode   int
		wantSigned bool
		rejected   []string
		denied     []string
	}{
		{
			name:      "user quota",
			configure: func(c *config.Config) { c.Limits.UserAllocations = 1 },
			run: func(t *testing.T, s *serverUnderTest) int {
				s.dial("udp", "demo", "demo").MustAllocate()
				s.dial("udp", "other", "other").MustAllocate() // another user is not affected
				return testturn.ErrorCode(s.last(s.dial("tcp", "demo", "demo")))
			},
			wantCode: 486, wantSigned: true, rejected: []string{"quota"},
		},
		{
			name: "allocate rate",
			configure: func(c *config.Config) {
				c.Limits.UserAllocateRate, c.Limits.UserAllocations = 1, 2 // a burst of 2
			},
			run: func(t *testing.T, s *serverUnderTest) int {
				s.dial("udp", "demo", "demo").MustAllocate()
				s.dial("tcp", "demo", "demo").MustAllocate()
				s.dial("udp", "other", "other").MustAllocate() // another user has a bucket of its own
				return testturn.ErrorCode(s.last(s.dial("udp", "demo", "demo")))
			},
			wantCode: 486, wantSigned: true, rejected: []string{"rate"},
		},
		{
			name:      "total quota",
			configure: func(c *config.Config) { c.Limits.TotalAllocations = 2 },
			run: func(t *testing.T, s *serverUnderTest) int {
				s.dial("udp", "demo", "demo").MustAllocate()
				s.dial("tcp", "demo", "demo").MustAllocate()
				return testturn.ErrorCode(s.last(s.dial("udp", "other", "other")))
			},
			wantCode: 486, wantSigned: true, rejected: []string{"quota"},
		},
		{
			name: "wrong password",
			run: func(t *testing.T, s *serverUnderTest) int {
				return testturn.ErrorCode(s.last(s.dial("udp", "demo", "wrong")))
			},
			wantCode: 401, rejected: []string{"auth"},
		},
		{
			name: "unknown user",
			run: func(t *testing.T, s *serverUnderTest) int {
				return testturn.ErrorCode(s.last(s.dial("tcp", "nobody", "demo")))
			},
			wantCode: 401, rejected: []string{"auth"},
		},
		{
			name:      "denied peer",
			configure: func(c *config.Config) { c.Peers.Denied = []string{"127.0.0.2"} },
			run: func(t *testing.T, s *serverUnderTest) int {
				c := s.dial("udp", "demo", "demo")
				c.MustAllocate()
				mustPermit(t, c, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 3), Port: 9}) // loopback stays open
				return c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 9})
			},
			wantCode: 403, denied: []string{"peer_denied"},
		},
		{
			name: "built-in special-purpose range",
			run: func(t *testing.T, s *serverUnderTest) int {
				c := s.dial("tcp", "demo", "demo")
				c.MustAllocate()
				return c.Permit(&net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 9}) // TEST-NET-1
			},
			wantCode: 403, denied: []string{"peer_denied"},
		},
		{
			name:      "loopback peer without allow_loopback",
			configure: func(c *config.Config) { c.Peers.AllowLoopback = false },
			run: func(t *testing.T, s *serverUnderTest) int {
				c := s.dial("udp", "demo", "demo")
				c.MustAllocate()
				return c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9})
			},
			wantCode: 403, denied: []string{"peer_denied"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &fakeObserver{}
			opts := testOptions()
			opts.Observer = obs
			opts.Config.Auth.Users["other"] = "other"
			// The allocate rate's buckets refill only on this stopped
			// clock: a slow run gets no token back.
			opts.AllocateRateClock, _ = stoppedClock()
			if tt.configure != nil {
				tt.configure(&opts.Config)
			}
			sut := &serverUnderTest{t: t, Server: start(t, opts)}
			if code := tt.run(t, sut); code != tt.wantCode {
				t.Fatalf("code %d, want %d", code, tt.wantCode)
			}
			if sut.resp != nil && sut.client.Signed(sut.resp) != tt.wantSigned {
				t.Errorf("response signed = %v, want %v", !tt.wantSigned, tt.wantSigned)
			}
			if got := obs.Rejected(); !slices.Equal(got, tt.rejected) {
				t.Errorf("AllocationRejected calls %q, want %q", got, tt.rejected)
			}
			if got := obs.Denied(); !slices.Equal(got, tt.denied) {
				t.Errorf("PermissionRejected calls %q, want %q", got, tt.denied)
			}
		})
	}
}

// TestChannelBindDeniedPeer: the peer filter also guards ChannelBind, which
// would otherwise open a channel (and with it a permission) to any peer.
func TestChannelBindDeniedPeer(t *testing.T) {
	obs := &fakeObserver{}
	opts := testOptions()
	opts.Observer = obs
	s := start(t, opts)
	c := dial(t, s, "udp")
	c.MustAllocate()
	number := testturn.RawAttr(stun.AttrChannelNumber, []byte{0x40, 0x00, 0, 0})
	peer := testturn.PeerAddr(&net.UDPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 9}) // TEST-NET-2
	// pion v5.1.3 alone would answer an unsigned 401 here; the gate answers
	// the 403 RFC 8656 §12.2 asks for, signed.
	resp := signedRequest(t, c, "demo", "demo", stun.MethodChannelBind, number, peer)
	if code := testturn.ErrorCode(resp); code != 403 {
		t.Fatalf("ChannelBind to a denied peer: %d, want 403", code)
	}
	if got, want := obs.Denied(), []string{"peer_denied"}; !slices.Equal(got, want) {
		t.Errorf("PermissionRejected calls %q, want %q", got, want)
	}
}
