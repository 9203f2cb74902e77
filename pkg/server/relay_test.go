package server_test

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
)

// TestRelay allocates, permits and echoes through a relay over each client
// transport, and follows the registry from creation to the allocation's end:
// a Refresh of 0 over UDP, a closed connection over TCP.
func TestRelay(t *testing.T) {
	tests := []struct {
		network   string
		transport allocation.Transport
		udp, tcp  int
	}{
		{"udp", allocation.UDP, 1, 0},
		{"tcp", allocation.TCP, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.network, func(t *testing.T) {
			obs := &fakeObserver{}
			opts := testOptions()
			opts.Observer = obs
			tr := &traffic.Counters{}
			opts.Traffic = tr
			s := start(t, opts)
			peer := echoPeer(t)
			reg := s.Table()

			c := dial(t, s, tt.network)
			relayed := c.MustAllocate()
			if !relayed.IP.IsLoopback() || relayed.Port < 49152 {
				t.Errorf("relayed address %v, want 127.0.0.1 in the default port range", relayed)
			}
			waitCount(t, reg, 1)
			wantByTransport(t, reg, tt.udp, tt.tcp, 0)
			if got := reg.UserCount("demo"); got != 1 {
				t.Errorf("UserCount(demo) = %d, want 1", got)
			}
			mustPermit(t, c, peer)
			mustEcho(t, c, peer, "hello over "+tt.network)
			if got := obs.Created(); len(got) != 1 || got[0] != tt.transport {
				t.Errorf("AllocationCreated calls %v, want [%v]", got, tt.transport)
			}

			if tt.network == "udp" {
				if code := c.Refresh(0); code != 0 {
					t.Fatalf("refresh 0: error %d", code)
				}
			} else {
				c.Close()
			}
			waitCount(t, reg, 0)
			wantByTransport(t, reg, 0, 0, 0)
			if got := reg.UserCount("demo"); got != 0 {
				t.Errorf("UserCount(demo) after the end = %d, want 0", got)
			}
			// Relay sockets publish their tallies in batches and when they
			// close, so the totals are exact only once the allocation is gone.
			if tr.ToPeerPackets.Load() == 0 || tr.FromPeerPackets.Load() == 0 {
				t.Errorf("traffic counters did not move: to peer %d, from peer %d",
					tr.ToPeerPackets.Load(), tr.FromPeerPackets.Load())
			}
		})
	}
}

// TestMixedTransports keeps UDP and TCP allocations live together so the
// classification is checked on one registry, then ends them one by one.
func TestMixedTransports(t *testing.T) {
	s := start(t, testOptions())
	reg := s.Table()
	u1, u2 := dial(t, s, "udp"), dial(t, s, "udp")
	c1 := dial(t, s, "tcp")
	for _, c := range []interface{ MustAllocate() *net.UDPAddr }{u1, u2, c1} {
		c.MustAllocate()
	}
	waitCount(t, reg, 3)
	wantByTransport(t, reg, 2, 1, 0)

	c1.Close()
	waitCount(t, reg, 2)
	wantByTransport(t, reg, 2, 0, 0)
	if code := u1.Refresh(0); code != 0 {
		t.Fatalf("refresh 0: error %d", code)
	}
	waitCount(t, reg, 1)
	wantByTransport(t, reg, 1, 0, 0)
}

// TestOneClientSocketTwoServerAddresses: a client may allocate from one
// socket on two of turnd's addresses (a browser gathers relay candidates
// from every TURN URL it was given through the same host socket, and two
// URLs may name one turnd), and over TCP one address and port may connect
// to two of them. Those are two 5-tuples and two allocations, and each
// relays its own channels and Send indications, even on the same channel
// number.
func TestOneClientSocketTwoServerAddresses(t *testing.T) {
	opts := testOptions()
	opts.Config.Listen.UDP = []string{"127.0.0.1:0", "127.0.0.1:0"}
	opts.Config.Listen.TCP = opts.Config.Listen.UDP
	opts.Config.Listen.UDPSockets = 1
	s := start(t, opts)
	for _, tc := range []struct {
		network, how string
		servers      []net.Addr
	}{
		{"udp", "channel", s.UDPAddrs()}, {"udp", "send", s.UDPAddrs()},
		{"tcp", "channel", s.TCPAddrs()}, {"tcp", "send", s.TCPAddrs()},
	} {
		t.Run(tc.network+" "+tc.how, func(t *testing.T) {
			if len(tc.servers) != 2 {
				t.Fatalf("server addresses %v, want two", tc.servers)
			}
			how := tc.how
			from := fmt.Sprintf("127.0.0.1:%d", testturn.FreePort(t))
			var clients [2]*testturn.Client
			for i, srv := range tc.servers {
				clients[i] = testturn.DialShared(t, tc.network, from, srv.String(), "demo", "demo")
				clients[i].MustAllocate()
			}
			waitCount(t, s.Table(), 2)
			// Both allocations get their binding before either relays.
			peers := [2]*net.UDPAddr{echoPeer(t), echoPeer(t)}
			for i, c := range clients {
				if how == "channel" {
					if code := testturn.ErrorCode(c.ChannelBind(0x4000, peers[i])); code != 0 {
						t.Fatalf("ChannelBind on server address %d: error %d", i, code)
					}
				} else {
					mustPermit(t, c, peers[i])
				}
			}
			for i, c := range clients {
				data := fmt.Sprintf("%s via server address %d", how, i)
				if how == "channel" && !c.EchoChannel(0x4000, data) {
					t.Errorf("no echo on channel 0x4000 through server address %d", i)
				}
				if how == "send" && !c.Echo(peers[i], data) {
					t.Errorf("no echo of a Send indication through server address %d", i)
				}
			}
			for _, c := range clients {
				if code := c.Refresh(0); code != 0 {
					t.Fatalf("refresh 0: error %d", code)
				}
				c.Close()
			}
			waitCount(t, s.Table(), 0)
		})
	}
}

// TestOneAddressOverUDPAndTCP: a UDP client and a TCP client may have the
// same IP address and port number (two users behind one carrier-grade NAT,
// which maps UDP and TCP separately). They hold two allocations, and the
// registry, which the drain waits on, must count two: one of them ending
// must not end the other's record, or the drain would finish with a call
// still live.
func TestOneAddressOverUDPAndTCP(t *testing.T) {
	port := testturn.FreePort(t)
	opts := testOptions()
	opts.Config.Listen.UDP = []string{fmt.Sprintf("127.0.0.1:%d", port)}
	opts.Config.Listen.TCP = opts.Config.Listen.UDP
	s := start(t, opts)
	reg := s.Table()
	peer := echoPeer(t)
	from := fmt.Sprintf("127.0.0.1:%d", testturn.FreePort(t))
	u := testturn.DialFrom(t, "udp", from, udpAddr(t, s), "demo", "demo")
	c := testturn.DialFrom(t, "tcp", from, tcpAddr(t, s), "demo", "demo")
	u.MustAllocate()
	c.MustAllocate()
	waitCount(t, reg, 2)
	wantByTransport(t, reg, 1, 1, 0)

	if code := u.Refresh(0); code != 0 {
		t.Fatalf("refresh 0 over udp: error %d", code)
	}
	waitCount(t, reg, 1)
	wantByTransport(t, reg, 0, 1, 0)
	mustPermit(t, c, peer)
	mustEcho(t, c, peer, "the tcp client relays on")
	c.Close()
	waitCount(t, reg, 0)
}

// TestLifetime checks the lifetime a client gets: the default when it asks
// for none, what it asks for under the cap, and the cap above it. The cap is
// 30 minutes: pion ignores a LIFETIME of an hour or more and grants its
// default instead, so the default cap of 1h would be granted as 10 minutes.
func TestLifetime(t *testing.T) {
	tests := []struct {
		name string
		ask  time.Duration // 0: no LIFETIME attribute
		want time.Duration
	}{
		{"default", 0, 10 * time.Minute},
		{"under the cap", 20 * time.Minute, 20 * time.Minute},
		{"capped at limits.max_lifetime", 5 * time.Hour, 30 * time.Minute},
	}
	opts := testOptions()
	opts.Config.Limits.MaxLifetime = 30 * time.Minute
	s := start(t, opts)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, s, "udp")
			var resp *stun.Message
			if tt.ask == 0 {
				resp = c.Allocate()
			} else {
				resp = c.Allocate(testturn.Lifetime(tt.ask))
			}
			if code := testturn.ErrorCode(resp); code != 0 {
				t.Fatalf("allocate: error %d", code)
			}
			if got := testturn.LifetimeOf(t, resp); got != tt.want {
				t.Errorf("lifetime %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTCPClientReadByRelayLoop: a plain TCP client's connection is read by
// a relay downlink loop from its accept on, with no goroutine of its own,
// and everything works over it: data both ways, and control requests,
// which the loop serves inline.
func TestTCPClientReadByRelayLoop(t *testing.T) {
	s := start(t, testOptions())
	peer := echoPeer(t)
	c := dial(t, s, "tcp")
	c.MustAllocate()
	mustPermit(t, c, peer)
	mustEcho(t, c, peer, "through the loop")
	buf := make([]byte, 1<<20)
	if st := string(buf[:runtime.Stack(buf, true)]); strings.Contains(st, "edge.(*clientConn).readLoop") {
		t.Fatal("a goroutine reads the TCP client's connection; want the relay loop alone")
	}
	if code := c.Refresh(10 * time.Minute); code != 0 {
		t.Fatalf("refresh over a loop-read connection: error %d", code)
	}
	mustPermit(t, c, peer)
	mustEcho(t, c, peer, "after the refresh")
	c.Close()
	waitCount(t, s.Table(), 0)
}
