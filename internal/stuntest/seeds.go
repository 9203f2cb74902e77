package stuntest

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// FuzzSeeds are valid and nearly valid client packets, shared by the fuzz
// targets of the edge's stream reader and of the handlers.
func FuzzSeeds(tb testing.TB) [][]byte {
	rest := RestKeys()[1]
	return [][]byte{
		nil,
		{0x40},
		bytes.Repeat([]byte{0xFF}, 24),
		ChannelData([]byte("hello"), false),
		ChannelData([]byte("hello"), true),
		SendIndication(tb, []byte("payload")),
		AliceAllocate(tb),
		AliceAllocate(tb, DontFragment(), Lifetime(time.Hour)),
		AliceAllocate(tb, ReservationToken([]byte("TOKEN-01"))),
		Request(tb, stun.MethodAllocate, User, AliceKey(), false, Transport(6)),
		Request(tb, stun.MethodAllocate, User, AliceKey(), true, Transport(17), stun.NewSoftware("after"), DontFragment()),
		Request(tb, stun.MethodRefresh, User, AliceKey(), true, Lifetime(time.Hour)),
		Request(tb, stun.MethodRefresh, RestUser, rest, true, Lifetime(time.Hour)),
		Request(tb, stun.MethodCreatePermission, RestUser, rest, true, XORAddr(stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 9)),
		Request(tb, stun.MethodAllocate, RestUser, rest, false, Transport(6), DontFragment()),
		Request(tb, MethodConnectionBind, User, AliceKey(), true, stun.RawAttribute{Type: stun.AttrConnectionID, Value: []byte{0, 0, 0, 1}}),
		Request(tb, stun.MethodAllocate, User, nil, false, Transport(17)),
	}
}
