package server_test

import (
	"fmt"
	"net"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// groupSockets is the SO_REUSEPORT group size of these tests.
const groupSockets = 3

func groupServer(t *testing.T) *serverUnderTest {
	t.Helper()
	opts := testOptions()
	opts.Config.Listen.UDPSockets = groupSockets
	s := start(t, opts)
	if n := s.UDPSocketCount(); n != groupSockets {
		t.Fatalf("%d UDP sockets bound, want %d", n, groupSockets)
	}
	udpAddr(t, s) // fails unless the group has one address
	return &serverUnderTest{t: t, Server: s}
}

// TestUDPSocketGroup: clients from 20 source ports are spread by the kernel
// over the group's sockets; each one's allocation, permission and relay
// work on whichever socket it lands.
func TestUDPSocketGroup(t *testing.T) {
	s := groupServer(t)
	peer := echoPeer(t)
	const clients = 20
	for i := range clients {
		c := s.dial("udp", "demo", "demo")
		c.MustAllocate()
		mustPermit(t, c, peer)
		mustEcho(t, c, peer, fmt.Sprintf("client %d", i))
	}
	waitCount(t, s.Table(), clients)
	wantByTransport(t, s.Table(), clients, 0, 0)
}

// evenPortReserve is EVEN-PORT with R=1: reserve the next port as well.
var evenPortReserve = testturn.RawAttr(stun.AttrEvenPort, []byte{0x80})

// TestReservationTokenAcrossGroup: RFC 8656 §7.2 reservations. The token
// comes from one client port and is used from another, which the kernel
// hashes to any socket of the group; pion alone keeps reservations per
// socket and would answer 508 on the others. Several pairs make it all but
// certain that some token crosses sockets.
//
// pion checks only that the even port is free, and nothing holds the
// reserved odd one: if another socket on the machine already has it, the
// token gets 508. Relay ports are taken above the kernel's default
// ephemeral range to make that rare, and a pair that meets it (the port is
// seen busy) is tried again rather than failed.
func TestReservationTokenAcrossGroup(t *testing.T) {
	opts := testOptions()
	opts.Config.Listen.UDPSockets = groupSockets
	opts.Config.Relay.MinPort = 61000
	s := &serverUnderTest{t: t, Server: start(t, opts)}
	peer := echoPeer(t)
	const pairs = 6
	done := 0
	for try := 0; done < pairs; try++ {
		if try == 2*pairs {
			t.Fatalf("only %d of %d reservations worked in %d tries", done, pairs, try)
		}
		first := s.dial("udp", "demo", "demo")
		resp := first.Allocate(evenPortReserve)
		if code := testturn.ErrorCode(resp); code != 0 {
			t.Fatalf("try %d: allocate with EVEN-PORT: error %d", try, code)
		}
		rtp := testturn.Relayed(t, resp)
		if rtp.Port%2 != 0 {
			t.Errorf("try %d: EVEN-PORT allocation got odd port %d", try, rtp.Port)
		}
		token, err := resp.Get(stun.AttrReservationToken)
		if err != nil {
			t.Fatalf("try %d: no RESERVATION-TOKEN in the EVEN-PORT response", try)
		}

		second := s.dial("udp", "demo", "demo")
		resp = second.Allocate(testturn.RawAttr(stun.AttrReservationToken, token))
		if code := testturn.ErrorCode(resp); code != 0 {
			if code == 508 && portBusy(rtp.Port+1) {
				t.Logf("try %d: reserved port %d was taken by another socket", try, rtp.Port+1)
				continue
			}
			t.Fatalf("try %d: allocate with the token from another port: error %d", try, code)
		}
		if rtcp := testturn.Relayed(t, resp); rtcp.Port != rtp.Port+1 {
			t.Errorf("try %d: reserved allocation on port %d, want %d", try, rtcp.Port, rtp.Port+1)
		}
		mustPermit(t, second, peer)
		mustEcho(t, second, peer, fmt.Sprintf("rtcp %d", try))

		// A token is good once.
		third := s.dial("udp", "demo", "demo")
		if code := testturn.ErrorCode(third.Allocate(testturn.RawAttr(stun.AttrReservationToken, token))); code != 508 {
			t.Errorf("try %d: token used twice: code %d, want 508", try, code)
		}
		done++
	}
}

// portBusy reports whether a UDP port of 127.0.0.1 is bound by some socket.
func portBusy(port int) bool {
	pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return true
	}
	pc.Close()
	return false
}
