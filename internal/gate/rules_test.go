package gate_test

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
)

// rulesPolicy knows alice, an allocation on the test 5-tuple owned by
// owner, and IPv4 relay addresses only.
func rulesPolicy(owner string) *gate.Policy {
	return &gate.Policy{
		Keys:                 staticKeys(),
		AllocationUser:       func(net.Addr, net.Addr) (string, bool) { return owner, true },
		RelayFamily:          func(v6 bool) bool { return !v6 },
		RefuseUnknownMethods: true,
	}
}

func channelNumber(n uint16) stun.Setter {
	v := make([]byte, 4)
	binary.BigEndian.PutUint16(v, n)
	return stun.RawAttribute{Type: stun.AttrChannelNumber, Value: v}
}

func family(f byte) stun.Setter {
	return stun.RawAttribute{Type: stun.AttrRequestedAddressFamily, Value: []byte{f, 0, 0, 0}}
}

// TestRulesAnswered: the requests the gate answers itself for pion, each
// signed with the requester's key (signed false: unsigned 400).
func TestRulesAnswered(t *testing.T) {
	peer := xorAddr(stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 9)
	tests := []struct {
		name   string
		owner  string
		pkt    []byte
		code   stun.ErrorCode
		signed bool
	}{
		{"Refresh on bob's allocation", "bob", request(t, stun.MethodRefresh, testUser, aliceKey(), true), 441, true},
		{"CreatePermission on bob's allocation", "bob",
			request(t, stun.MethodCreatePermission, testUser, aliceKey(), true, peer), 441, true},
		{"ChannelBind on bob's allocation", "bob",
			request(t, stun.MethodChannelBind, testUser, aliceKey(), true, channelNumber(0x4000), peer), 441, true},
		{"Connect on bob's allocation", "bob", request(t, stun.MethodConnect, testUser, aliceKey(), true, peer), 441, true},
		{"Connect to port 0", testUser, request(t, stun.MethodConnect, testUser, aliceKey(), true,
			xorAddr(stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 0)), 400, true},
		{"channel 0x3FFF", testUser,
			request(t, stun.MethodChannelBind, testUser, aliceKey(), true, channelNumber(0x3FFF), peer), 400, true},
		{"channel 0x8000", testUser,
			request(t, stun.MethodChannelBind, testUser, aliceKey(), true, channelNumber(0x8000), peer), 400, true},
		{"IPv6 relay asked for", testUser, aliceAllocate(t, family(2)), 440, true},
		{"IPv6 with a token: step 5's 400", testUser, aliceAllocate(t, family(2), reservationToken([]byte("TOKEN-01"))), 400, true},
		{"unknown method", testUser, request(t, stun.Method(0x050), testUser, nil, true), 400, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gate.New(rulesPolicy(tc.owner), gate.Hooks{})
			r := &responder{}
			if out, v := g.Inspect(tc.pkt, clientAddr(), localAddr(), r); v != gate.Answered || out != nil {
				t.Fatalf("Inspect = (%x, %v), want Answered", out, v)
			}
			m := r.onlyReply(t)
			if got := errorCode(t, m); got != tc.code {
				t.Errorf("code %d, want %d", got, tc.code)
			}
			if tc.signed {
				checkSigned(t, m, aliceKey())
			} else if m.Contains(stun.AttrMessageIntegrity) {
				t.Errorf("unknown method answered signed: %v", m)
			}
		})
	}
}

// TestRulesPassed: what the rules leave to pion, and a policy that leaves
// every rule to pion.
func TestRulesPassed(t *testing.T) {
	peer := xorAddr(stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 9)
	tests := []struct {
		name   string
		policy *gate.Policy
		pkt    []byte
	}{
		{"Refresh by the owner", rulesPolicy(testUser), request(t, stun.MethodRefresh, testUser, aliceKey(), true)},
		{"channel 0x4000", rulesPolicy(testUser),
			request(t, stun.MethodChannelBind, testUser, aliceKey(), true, channelNumber(0x4000), peer)},
		{"channel 0x7FFF", rulesPolicy(testUser),
			request(t, stun.MethodChannelBind, testUser, aliceKey(), true, channelNumber(0x7FFF), peer)},
		{"IPv4 relay asked for", rulesPolicy(testUser), aliceAllocate(t, family(1))},
		{"unknown family: pion's 440", rulesPolicy(testUser), aliceAllocate(t, family(9))},
		{"unknown method, rule off", &gate.Policy{Keys: staticKeys()}, request(t, stun.Method(0x050), testUser, nil, true)},
		{"another user, rule off", &gate.Policy{Keys: staticKeys()},
			request(t, stun.MethodRefresh, testUser, aliceKey(), true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustPass(t, gate.New(tc.policy, gate.Hooks{}), tc.pkt)
		})
	}
}
