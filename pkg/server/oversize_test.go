package server_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
)

// TestOversizedPeerDatagramKeepsTheStreamWellFormed: an IPv6 peer's 65 507-byte
// datagram does not fit a Data indication (16-bit length), so written as one
// its length would wrap and the peer's bytes would be read as frames of the
// TCP client's stream. It is dropped and counted instead, and the peer's next
// datagram is the next frame, intact. On a channel the same datagram fits
// ChannelData and arrives whole.
func TestOversizedPeerDatagramKeepsTheStreamWellFormed(t *testing.T) {
	cfg := testConfig()
	cfg.Listen.TCP = []string{"[::1]:0"} // relays on ::1 for clients of this listener
	s := start(t, server.Options{Config: cfg})
	peer, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatalf("listen IPv6 peer: %v", err)
	}
	t.Cleanup(func() { peer.Close() })
	peerAddr := peer.LocalAddr().(*net.UDPAddr)

	c := testturn.Dial(t, "tcp", tcpAddr(t, s), "demo", "demo")
	relayed := c.MustAllocate()
	if relayed.IP.To4() != nil {
		t.Fatalf("relayed address %v, want IPv6", relayed)
	}
	mustPermit(t, c, peerAddr)

	// The payload looks like a ChannelData frame, as an attacker's would.
	big := bytes.Repeat([]byte{0x40, 0x00, 0x00, 0x04}, 65507/4+1)[:65507]
	send := func(b []byte) {
		t.Helper()
		if _, err := peer.WriteToUDP(b, relayed); err != nil {
			t.Fatalf("peer send %d bytes: %v", len(b), err)
		}
	}
	// A downlink loop drops a frame while the connection is busy with
	// another write (pion's last answer, say), so each step is retried
	// (bounded) until its frame arrives.
	next := func(sent ...[]byte) []byte {
		t.Helper()
		for range 10 {
			for _, b := range sent {
				send(b)
			}
			if frame, err := c.ReadFrame(time.Second); err == nil {
				return frame
			}
		}
		t.Fatalf("no frame arrived for datagrams of %d bytes", len(sent[len(sent)-1]))
		return nil
	}
	dropped := s.Traffic().DroppedToClient.Load()
	frame := next(big, []byte("after"))
	msg := &stun.Message{Raw: frame}
	if err := msg.Decode(); err != nil || msg.Type != stun.NewType(stun.MethodData, stun.ClassIndication) {
		t.Fatalf("next frame is % x... (%d bytes, %v), want a Data indication", frame[:min(len(frame), 32)], len(frame), err)
	}
	if data, err := msg.Get(stun.AttrData); err != nil || string(data) != "after" {
		t.Fatalf("next Data indication carries %q (%v), want %q", data, err, "after")
	}
	if got := s.Traffic().DroppedToClient.Load() - dropped; got < 1 {
		t.Fatal("turnd_relay_dropped_total{direction=to_client} did not count the oversized datagram")
	}

	// A bound channel carries the same datagram whole.
	if code := testturn.ErrorCode(c.ChannelBind(0x4001, peerAddr)); code != 0 {
		t.Fatalf("ChannelBind: error %d", code)
	}
	for _, want := range [][]byte{big, []byte("after")} {
		frame := next(want)
		if len(frame) < 4 || binary.BigEndian.Uint16(frame) != 0x4001 || !bytes.Equal(frame[4:], want) {
			t.Fatalf("got a %d-byte frame, want ChannelData 0x4001 with %d bytes", len(frame), len(want))
		}
	}
}
