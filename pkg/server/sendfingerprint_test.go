package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// TestSendIndicationWithBadFingerprintNotRelayed: a Send indication whose
// FINGERPRINT does not match is not STUN (RFC 8489 §14.7) and must not reach
// the peer, whether the fast path or pion would have carried it; the next,
// sound one does.
func TestSendIndicationWithBadFingerprintNotRelayed(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			s := start(t, testOptions())
			c := dial(t, s, network)
			c.MustAllocate()
			peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = peer.Close() })
			peerAddr := peer.LocalAddr().(*net.UDPAddr)
			mustPermit(t, c, peerAddr)

			m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
				testturn.PeerAddr(peerAddr), testturn.RawAttr(stun.AttrData, []byte("corrupt")), stun.Fingerprint)
			if err != nil {
				t.Fatal(err)
			}
			m.Raw[len(m.Raw)-1] ^= 0xFF
			if _, err := c.Conn().Write(m.Raw); err != nil {
				t.Fatal(err)
			}
			c.Send(peerAddr, []byte("sound"))

			buf := make([]byte, 64)
			_ = peer.SetReadDeadline(time.Now().Add(waitTimeout))
			n, _, err := peer.ReadFromUDP(buf)
			if err != nil {
				t.Fatalf("the sound Send indication never arrived: %v", err)
			}
			if got := string(buf[:n]); got != "sound" {
				t.Fatalf("the peer got %q first, want only %q", got, "sound")
			}
		})
	}
}
