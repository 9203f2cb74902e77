package gate_test

import (
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
)

// TestReleasingHookSeesRefreshToZero: an authenticated Refresh asking for
// lifetime 0 is the client ending its allocation (RFC 8656 §8.2), and the
// usage record says so; any other Refresh, or one without integrity, is not.
func TestReleasingHookSeesRefreshToZero(t *testing.T) {
	tests := []struct {
		name string
		pkt  func(tb testing.TB) []byte
		want int
	}{
		{"lifetime 0", func(tb testing.TB) []byte {
			return request(tb, stun.MethodRefresh, testUser, aliceKey(), true, lifetime(0))
		}, 1},
		{"lifetime 1 minute", func(tb testing.TB) []byte {
			return request(tb, stun.MethodRefresh, testUser, aliceKey(), true, lifetime(time.Minute))
		}, 0},
		{"no lifetime", func(tb testing.TB) []byte {
			return request(tb, stun.MethodRefresh, testUser, aliceKey(), true)
		}, 0},
		{"wrong key", func(tb testing.TB) []byte {
			return request(tb, stun.MethodRefresh, testUser, []byte("not alice's key"), true, lifetime(0))
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			g := gate.New(&gate.Policy{Keys: staticKeys()}, gate.Hooks{Releasing: func(client, server net.Addr) {
				got = append(got, client.String()+" "+server.String())
			}})
			g.Inspect(tc.pkt(t), clientAddr(), localAddr(), &responder{})
			if len(got) != tc.want {
				t.Fatalf("Releasing called %d times (%v), want %d", len(got), got, tc.want)
			}
			if tc.want == 1 && got[0] != clientAddr().String()+" "+localAddr().String() {
				t.Fatalf("Releasing(%s), want the request's 5-tuple", got[0])
			}
		})
	}
}
