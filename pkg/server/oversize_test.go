package server_test

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/server"
)

// TestOversizedPeerDatagramKeepsTheStreamWellFormed: an IPv6 peer's 65 507-byte
// datagram does not fit a Data indication (16-bit length), so written as one
// its length would wrap and the peer's bytes would be read as frames of the
// client's stream. It is dropped and counted instead, and the peer's next
// datagram is the next frame, intact. On a channel it fits ChannelData: a
// TCP or TLS client gets it whole (the edge frames TLS like TCP). A UDP
// client is checked too: it has no stream to break, but must get the next
// datagram all the same.
func TestOversizedPeerDatagramKeepsTheStreamWellFormed(t *testing.T) {
	for _, name := range []string{"udp", "tcp", "tls"} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Listen.UDP = []string{"[::1]:0"} // relays on ::1 for clients of these listeners
			cfg.Listen.TCP = []string{"[::1]:0"}
			var c *testturn.Client
			if name == "tls" {
				cfg.Listen.TLS = []string{"[::1]:0"}
				cfg.TLS.CertFile, cfg.TLS.KeyFile = writeCert(t, t.TempDir(), 1)
			}
			tr := &traffic.Counters{}
			s := start(t, server.Options{Config: cfg, Traffic: tr})
			switch name {
			case "udp":
				c = testturn.Dial(t, "udp", udpAddr(t, s), "demo", "demo")
			case "tls":
				c = testturn.DialTLS(t, s.TLSAddrs()[0].String(), &tls.Config{InsecureSkipVerify: true}, "demo", "demo") //nolint:gosec // self-signed test certificate
			default:
				c = testturn.Dial(t, "tcp", tcpAddr(t, s), "demo", "demo")
			}
			oversizedDatagram(t, tr, c)
		})
	}
}

func oversizedDatagram(t *testing.T, tr *traffic.Counters, c *testturn.Client) {
	peer, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatalf("listen IPv6 peer: %v", err)
	}
	t.Cleanup(func() { peer.Close() })
	peerAddr := peer.LocalAddr().(*net.UDPAddr)
	relayed := c.MustAllocate()
	if relayed.IP.To4() != nil {
		t.Fatalf("relayed address %v, want IPv6", relayed)
	}
	mustPermit(t, c, peerAddr)

	// The payload looks like ChannelData frames, as an attacker's would.
	big := bytes.Repeat([]byte{0x40, 0x00, 0x00, 0x04}, 65507/4+1)[:65507]
	after := []byte("after")
	// A downlink loop drops a frame while the connection is busy with
	// another write (the last answer, say), so each step is retried
	// (bounded) until a frame arrives.
	next := func(sent ...[]byte) []byte {
		t.Helper()
		for range 10 {
			for _, b := range sent {
				if _, err := peer.WriteToUDP(b, relayed); err != nil {
					t.Fatalf("peer send %d bytes: %v", len(b), err)
				}
			}
			if frame, err := c.ReadFrame(time.Second); err == nil {
				return frame
			}
		}
		t.Fatalf("no frame arrived for datagrams of %d bytes", len(sent[len(sent)-1]))
		return nil
	}
	wantDataIndication := func(frame []byte) {
		t.Helper()
		msg := &stun.Message{Raw: frame}
		if err := msg.Decode(); err != nil || msg.Type != stun.NewType(stun.MethodData, stun.ClassIndication) {
			t.Fatalf("next frame is % x... (%d bytes, %v), want a Data indication", frame[:min(len(frame), 32)], len(frame), err)
		}
		if data, err := msg.Get(stun.AttrData); err != nil || !bytes.Equal(data, after) {
			t.Fatalf("next Data indication carries %d bytes (%v), want %q", len(data), err, after)
		}
	}
	dropped := tr.DroppedToClient[traffic.TooLong].Packets.Load()
	wantDataIndication(next(big, after))
	if got := tr.DroppedToClient[traffic.TooLong].Packets.Load() - dropped; got < 1 {
		t.Fatal("turnd_relay_dropped_total{direction=to_client,reason=too_long} did not count the oversized datagram")
	}

	if code := testturn.ErrorCode(c.ChannelBind(0x4001, peerAddr)); code != 0 {
		t.Fatalf("ChannelBind: error %d", code)
	}
	wantChannel := func(frame, want []byte) {
		t.Helper()
		if len(frame) < 4 || binary.BigEndian.Uint16(frame) != 0x4001 || !bytes.Equal(frame[4:], want) {
			t.Fatalf("got a %d-byte frame, want ChannelData 0x4001 with %d bytes", len(frame), len(want))
		}
	}
	if c.Stream() {
		wantChannel(next(big), big)
	} // a UDP client's test socket reads 2048 bytes: it could not take the whole datagram
	wantChannel(next(after), after)
}
