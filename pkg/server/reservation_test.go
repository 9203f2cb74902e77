package server_test

import (
	"math/rand/v2"
	"net"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
)

var (
	evenPortR  = testturn.RawAttr(stun.AttrEvenPort, []byte{0x80})
	evenPortR0 = testturn.RawAttr(stun.AttrEvenPort, []byte{0x00})
	familyIPv4 = testturn.RawAttr(stun.AttrRequestedAddressFamily, []byte{0x01, 0, 0, 0})
)

// freeRelayRange returns n consecutive loopback UDP ports, starting even,
// that were free a moment ago (above the ephemeral range, see testConfig).
func freeRelayRange(t *testing.T, n int) (int, int) {
	t.Helper()
	for range 50 {
		lo := 61000 + 2*rand.IntN((65535-61000-n)/2)
		free := true
		for p := lo; p < lo+n && free; p++ {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
			if err != nil {
				free = false
				continue
			}
			c.Close()
		}
		if free {
			return lo, lo + n - 1
		}
	}
	t.Fatal("no free relay port range")
	return 0, 0
}

// TestReservationsCountedByQuota: EVEN-PORT (R) then Refresh 0, over and
// over, must not leave the odd ports held for 30 s each, counted by no
// quota, until another user's EVEN-PORT Allocate finds no pair (508). A
// reservation ends with its allocation, and a user's live tokens are capped.
func TestReservationsCountedByQuota(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.UserAllocations = 4
	cfg.Relay.MinPort, cfg.Relay.MaxPort = freeRelayRange(t, 12) // 6 pairs
	cfg.Auth.Users = map[string]string{"demo": "demo", "mallory": "mallory"}
	s := start(t, server.Options{Config: cfg})

	m := dialAs(t, s, "udp", "mallory", "mallory")
	for i := range 20 {
		resp := m.Allocate(evenPortR)
		if testturn.ErrorCode(resp) != 0 {
			continue // 486 past the reservation cap, 508 with the range held
		}
		if code := m.Refresh(0); code != 0 {
			t.Fatalf("cycle %d: Refresh 0: error %d", i, code)
		}
	}
	c := dial(t, s, "udp")
	resp := c.Allocate(evenPortR)
	if code := testturn.ErrorCode(resp); code != 0 {
		t.Fatalf("another user's EVEN-PORT Allocate: error %d, want success", code)
	}
	if !resp.Contains(stun.AttrReservationToken) || testturn.Relayed(t, resp).Port%2 != 0 {
		t.Fatal("EVEN-PORT with R: want an even port and a RESERVATION-TOKEN")
	}
}

// TestReservationConformance: RFC 8656 §7.2 steps 5 and 6 against the real
// server. A RESERVATION-TOKEN with EVEN-PORT or REQUESTED-ADDRESS-FAMILY is
// 400, and the token stays good; EVEN-PORT with R=0 gets an even port and
// no token.
func TestReservationConformance(t *testing.T) {
	s := start(t, testOptions())
	first := dial(t, s, "udp")
	resp := first.Allocate(evenPortR)
	token, err := resp.Get(stun.AttrReservationToken)
	if testturn.ErrorCode(resp) != 0 || err != nil {
		t.Fatalf("EVEN-PORT with R: error %d, token %v", testturn.ErrorCode(resp), err)
	}
	p := testturn.Relayed(t, resp).Port
	tok := testturn.RawAttr(stun.AttrReservationToken, token)

	for _, tc := range []struct {
		name  string
		extra stun.Setter
	}{{"with EVEN-PORT", evenPortR0}, {"with EVEN-PORT R", evenPortR}, {"with REQUESTED-ADDRESS-FAMILY", familyIPv4}} {
		c := dial(t, s, "udp")
		if code := testturn.ErrorCode(c.Allocate(tok, tc.extra)); code != 400 {
			t.Errorf("RESERVATION-TOKEN %s: error %d, want 400", tc.name, code)
		}
	}
	second := dial(t, s, "udp")
	resp = second.Allocate(tok)
	if code := testturn.ErrorCode(resp); code != 0 || testturn.Relayed(t, resp).Port != p+1 {
		t.Fatalf("the token after the refused requests: error %d, want success on port %d", code, p+1)
	}

	c := dial(t, s, "udp")
	resp = c.Allocate(evenPortR0)
	if code := testturn.ErrorCode(resp); code != 0 {
		t.Fatalf("EVEN-PORT with R=0: error %d", code)
	}
	if resp.Contains(stun.AttrReservationToken) {
		t.Error("EVEN-PORT with R=0 got a RESERVATION-TOKEN")
	}
	if port := testturn.Relayed(t, resp).Port; port%2 != 0 {
		t.Errorf("EVEN-PORT with R=0 got odd port %d", port)
	}
}

// reservationToken makes the row's client allocate with EVEN-PORT (R) and
// returns the RESERVATION-TOKEN it got, as an attribute to present.
func (e *ruleEnv) reservationToken(t *testing.T) stun.Setter {
	t.Helper()
	resp := e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, evenPortR)
	token, err := resp.Get(stun.AttrReservationToken)
	if testturn.ErrorCode(resp) != 0 || err != nil {
		t.Fatalf("EVEN-PORT with R: error %d, token %v", testturn.ErrorCode(resp), err)
	}
	return testturn.RawAttr(stun.AttrReservationToken, token)
}
