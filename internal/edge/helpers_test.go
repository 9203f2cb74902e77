package edge_test

import (
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
