package edge_test

import (
	"net"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/stuntest"
)

// The shared packet builders, under the names this package's tests use.
const (
	testRealm = stuntest.Realm
	testUser  = stuntest.User
	testPass  = stuntest.Pass

	methodConnectionBind = stuntest.MethodConnectionBind
)

var (
	aliceKey         = stuntest.AliceKey
	staticKeys       = stuntest.StaticKeys
	fuzzStore        = stuntest.FuzzStore
	request          = stuntest.Request
	aliceAllocate    = stuntest.AliceAllocate
	transport        = stuntest.Transport
	lifetime         = stuntest.Lifetime
	dontFragment     = stuntest.DontFragment
	reservationToken = stuntest.ReservationToken
	channelData      = stuntest.ChannelData
	sendIndication   = stuntest.SendIndication
	xorAddr          = stuntest.XORAddr
	decode           = stuntest.Decode
	checkSigned      = stuntest.CheckSigned
	errorCode        = stuntest.ErrorCode
	fuzzSeeds        = stuntest.FuzzSeeds
	fingerprintOK    = stuntest.FingerprintOK
)

// strictPolicy makes every authenticated Allocate an answer or a rewrite,
// so a test that expects Pass shows the gate did not act on the packet.
func strictPolicy() *gate.Policy {
	return &gate.Policy{
		Keys:        staticKeys(),
		MaxLifetime: time.Minute,
		Alternates:  fixed(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 3478}),
	}
}

// fixed is a Policy.Alternates that always offers alts.
func fixed(alts ...*net.UDPAddr) func() []*net.UDPAddr {
	if len(alts) == 0 {
		return nil
	}
	return func() []*net.UDPAddr { return alts }
}

// mustPacketConn is Edge.PacketConn or a failed test.
func mustPacketConn(tb testing.TB, inner *net.UDPConn, e *edge.Edge, hint *edge.PortHint, fast edge.FastPath) net.PacketConn {
	tb.Helper()
	sock, err := mmsg.Adopt(inner)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sock.Close() })
	pc, err := e.PacketConn(sock, hint, fast)
	if err != nil {
		tb.Fatal(err)
	}
	return pc
}

// actingPolicy answers (draining) and rewrites (lifetime cap) whatever it can.
func actingPolicy() *gate.Policy {
	return &gate.Policy{Keys: fuzzStore().Keys, MultiKey: true, MaxLifetime: time.Minute, RefuseUnknownMethods: true,
		Alternates: fixed(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 10), Port: 3478}, &net.UDPAddr{IP: net.ParseIP("::1"), Port: 3479})}
}
