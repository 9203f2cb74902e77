package edge_test

import (
	"bytes"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/gate"
)

// ioTimeout bounds every blocking socket call in these tests; it is a
// failure guard, never a synchronisation step.
const ioTimeout = 5 * time.Second

// listenUDP binds a loopback UDP socket on a free port.
func listenUDP(tb testing.TB) *net.UDPConn {
	tb.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatalf("listen udp: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	if err := c.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		tb.Fatal(err)
	}
	return c
}

func sendUDP(tb testing.TB, from *net.UDPConn, to net.Addr, pkts ...[]byte) {
	tb.Helper()
	for _, p := range pkts {
		if _, err := from.WriteTo(p, to); err != nil {
			tb.Fatalf("send: %v", err)
		}
	}
}

// readPacket reads one datagram through pc (the gate wrapper or a client).
func readPacket(tb testing.TB, pc net.PacketConn) ([]byte, net.Addr) {
	tb.Helper()
	buf := make([]byte, 1600)
	n, addr, err := pc.ReadFrom(buf)
	if err != nil {
		tb.Fatalf("read: %v", err)
	}
	return buf[:n], addr
}

// TestPacketConnVerdicts checks what pion reads through the UDP wrapper:
// passing packets unchanged, rewritten packets rewritten, answered packets
// not at all (ReadFrom goes on to the next packet) while the client gets
// the answer.
func TestPacketConnVerdicts(t *testing.T) {
	var draining atomic.Bool
	p := strictPolicy()
	p.MaxLifetime = 0
	g := gate.New(p, gate.Hooks{Accepting: func() bool { return !draining.Load() }})
	server, client := listenUDP(t), listenUDP(t)
	pc := mustPacketConn(t, server, edge.New(g, nil), nil, nil)

	cd := channelData([]byte("media"), false)
	df := aliceAllocate(t, dontFragment())
	plain := aliceAllocate(t)

	tests := []struct {
		name     string
		draining bool
		send     [][]byte
		want     func(t *testing.T, got []byte) // checks what pion reads
		answered bool                           // the client gets a reply
	}{
		{"ChannelData passes", false, [][]byte{cd}, func(t *testing.T, got []byte) {
			if !bytes.Equal(got, cd) {
				t.Errorf("read %x, want %x", got, cd)
			}
		}, false},
		{"plain Allocate passes", false, [][]byte{plain}, func(t *testing.T, got []byte) {
			if !bytes.Equal(got, plain) {
				t.Errorf("read %x, want the Allocate unchanged", got)
			}
		}, false},
		{"DONT-FRAGMENT rewritten", false, [][]byte{df}, func(t *testing.T, got []byte) {
			m := decode(t, got)
			if m.Contains(stun.AttrDontFragment) || m.TransactionID != decode(t, df).TransactionID {
				t.Errorf("read %v, want the Allocate without DONT-FRAGMENT", m)
			}
			checkSigned(t, m, aliceKey())
		}, false},
		{"answered Allocate skipped", true, [][]byte{plain, cd}, func(t *testing.T, got []byte) {
			if !bytes.Equal(got, cd) {
				t.Errorf("read %x, want the ChannelData behind the answered Allocate", got)
			}
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			draining.Store(tc.draining)
			sendUDP(t, client, server.LocalAddr(), tc.send...)
			got, from := readPacket(t, pc)
			if from.String() != client.LocalAddr().String() {
				t.Errorf("source %v, want %v", from, client.LocalAddr())
			}
			tc.want(t, got)
			if !tc.answered {
				return
			}
			reply, _ := readPacket(t, client)
			m := decode(t, reply)
			checkSigned(t, m, aliceKey())
			if code := errorCode(t, m); code != stun.CodeTryAlternate {
				t.Errorf("client got code %d, want 300", code)
			}
		})
	}
	_ = g.TakeDontFragment(client.LocalAddr(), server.LocalAddr())
}

// TestPacketConnReadError checks that socket errors reach pion (its read
// loop ends on them), and that Close wakes a read waiting for a datagram
// (pion's shutdown).
func TestPacketConnReadError(t *testing.T) {
	pc := mustPacketConn(t, listenUDP(t), edge.New(gate.New(strictPolicy(), gate.Hooks{}), nil), nil, nil)
	errc := make(chan error, 1)
	go func() {
		_, _, err := pc.ReadFrom(make([]byte, 1600))
		errc <- err
	}()
	_ = pc.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("ReadFrom on a closed socket returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting ReadFrom")
	}
	if _, _, err := pc.ReadFrom(make([]byte, 1600)); err == nil {
		t.Fatal("ReadFrom after Close returned no error")
	}
}

// TestPacketConnFastPath: the fast path is offered every packet first; what
// it takes never reaches pion, what it declines does, unchanged.
func TestPacketConnFastPath(t *testing.T) {
	taken := channelData([]byte("relayed by the fast path"), false)
	declined := channelData([]byte("for pion"), false)
	indication := sendIndication(t, []byte("for pion too"))
	server, client := listenUDP(t), listenUDP(t)
	var offered [][]byte
	fast := func(pkt []byte, from netip.AddrPort) bool {
		if from.String() != client.LocalAddr().String() {
			t.Errorf("fast path got source %v, want %v", from, client.LocalAddr())
		}
		offered = append(offered, bytes.Clone(pkt))
		return bytes.Equal(pkt, taken)
	}
	pc := mustPacketConn(t, server, edge.New(gate.New(strictPolicy(), gate.Hooks{}), nil), nil, fast)

	tests := []struct {
		name    string
		send    [][]byte
		want    []byte
		offered int
	}{
		{"taken ChannelData skipped", [][]byte{taken, declined}, declined, 2},
		{"declined indication reaches pion", [][]byte{indication}, indication, 1},
		{"declined short ChannelData reaches pion", [][]byte{{0x40, 0x00}}, []byte{0x40, 0x00}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			offered = nil
			sendUDP(t, client, server.LocalAddr(), tc.send...)
			if got, _ := readPacket(t, pc); !bytes.Equal(got, tc.want) {
				t.Errorf("pion read %x, want %x", got, tc.want)
			}
			if len(offered) != tc.offered {
				t.Errorf("fast path offered %d packets, want %d", len(offered), tc.offered)
			}
		})
	}
}

// TestPanicInFastPathDropsOnePacket: a panic while handling one datagram is
// recovered and reported; the next datagram is served as usual.
func TestPanicInFastPathDropsOnePacket(t *testing.T) {
	server, client := listenUDP(t), listenUDP(t)
	boom := channelData([]byte("boom"), false)
	fine := channelData([]byte("fine"), false)
	var panics []any
	e := edge.New(gate.New(strictPolicy(), gate.Hooks{}), func(v any) { panics = append(panics, v) })
	pc := mustPacketConn(t, server, e, nil, func(pkt []byte, _ netip.AddrPort) bool {
		if bytes.Equal(pkt, boom) {
			panic("hostile packet")
		}
		return false
	})
	sendUDP(t, client, server.LocalAddr(), boom, fine)
	if got, _ := readPacket(t, pc); !bytes.Equal(got, fine) {
		t.Fatalf("pion read %x, want the packet after the panicking one", got)
	}
	if len(panics) != 1 || panics[0] != "hostile packet" {
		t.Fatalf("Panicked hook got %v", panics)
	}
}
