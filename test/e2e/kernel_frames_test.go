package e2e

import (
	"encoding/binary"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// TestKernelLeavesOtherFramesToUserSpace: on a channel the kernel relays,
// what the program must not touch goes up to user space as it came, which
// does with it what it always did: a Send indication and padded
// ChannelData reach the peer with their payload exactly, a peer's datagram
// from a port with no channel reaches the client as a Data indication,
// ChannelData shorter than its length says or on an unbound channel
// reaches nobody. The kernel path counts none of them.
func TestKernelLeavesOtherFramesToUserSpace(t *testing.T) {
	k := newKernelNet(t)
	srv := k.start(t, kernelConfig(t), "tc")
	peer := k.listenPeer(t, kPeer4)
	ch := k.openChannel(t, kClient4, net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)), peer)
	ch.throughKernel(t, srv, payloads("warm", 10))
	before := srv.kernel(t)
	frame := func(number uint16, length int, body string) []byte {
		f := binary.BigEndian.AppendUint16(nil, number)
		f = binary.BigEndian.AppendUint16(f, uint16(length))
		return append(f, body...)
	}
	write := func(b []byte) {
		if _, err := ch.c.Conn().Write(b); err != nil {
			t.Fatal(err)
		}
	}

	ch.c.Send(peer.addr(), []byte("by send indication"))
	write(frame(ch.number, 6, "padded\x00\x00"))
	for _, want := range []string{"by send indication", "padded"} {
		if d, ok := peer.next(5 * time.Second); !ok || d.payload != want {
			t.Fatalf("the peer got %q (%v), want %q", d.payload, ok, want)
		}
	}

	other := k.listenPeer(t, kPeer4) // the same IP, another port: a permission, no channel
	other.send(t, ch.relay, "from another port")
	f, err := ch.c.ReadFrame(5 * time.Second)
	m := &stun.Message{Raw: f}
	if err != nil || m.Decode() != nil || m.Type != stun.NewType(stun.MethodData, stun.ClassIndication) {
		t.Fatalf("the client got %x (%v) for a datagram from another port of the peer, want a Data indication", f, err)
	}
	if v, _ := m.Get(stun.AttrData); string(v) != "from another port" {
		t.Fatalf("the Data indication carries %q", v)
	}

	write(frame(ch.number, 10, "short"))
	write(frame(ch.number+1, 7, "unbound"))
	if d, ok := peer.next(500 * time.Millisecond); ok { // absence: a bounded wait
		t.Errorf("the peer got %q from short ChannelData or ChannelData on an unbound channel", d.payload)
	}
	if after := srv.kernel(t); after.toPeer != before.toPeer || after.toClient != before.toClient {
		t.Errorf("the kernel path relayed %v to the peer and %v to the client of what it must leave alone",
			after.toPeer-before.toPeer, after.toClient-before.toClient)
	}
}
