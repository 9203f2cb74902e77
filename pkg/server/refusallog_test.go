package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
)

// pipeline writes every request on c's stream at once and returns the
// error code of each response, in the order they came.
func pipeline(t *testing.T, c *testturn.Client, reqs []*stun.Message) []int {
	t.Helper()
	var buf []byte
	for _, r := range reqs {
		buf = append(buf, r.Raw...)
	}
	written := make(chan error, 1)
	go func() { _, err := c.Conn().Write(buf); written <- err }()
	codes := make([]int, 0, len(reqs))
	for len(codes) < len(reqs) {
		raw, err := c.ReadFrame(waitTimeout)
		if err != nil {
			t.Fatalf("response %d of %d: %v", len(codes)+1, len(reqs), err)
		}
		m := &stun.Message{Raw: raw}
		if err := m.Decode(); err != nil || m.Type.Class == stun.ClassIndication {
			continue
		}
		codes = append(codes, testturn.ErrorCode(m))
	}
	if err := <-written; err != nil {
		t.Fatalf("write: %v", err)
	}
	return codes
}

// permissions builds n signed CreatePermission requests for peer.
func permissions(c *testturn.Client, n int, peer func(i int) *net.UDPAddr) []*stun.Message {
	reqs := make([]*stun.Message, n)
	for i := range reqs {
		reqs[i] = c.Build(stun.MethodCreatePermission, testturn.PeerAddr(peer(i)))
	}
	return reqs
}

// wantAll checks that every code is want.
func wantAll(t *testing.T, codes []int, want int, what string) {
	t.Helper()
	for i, code := range codes {
		if code != want {
			t.Fatalf("%s %d of %d answered %d, want %d", what, i+1, len(codes), code, want)
		}
	}
}

// TestDeniedPeerLinesAreBounded: CreatePermissions to a denied peer
// pipelined on one TCP connection are all refused and counted, and make at
// most LogLinesPerSecond "peer refused" lines in a second; the next
// second's line says how many were held back.
func TestDeniedPeerLinesAreBounded(t *testing.T) {
	const requests = 5000
	obs := &fakeObserver{}
	var log lineLog
	opts := testOptions()
	opts.Observer, opts.Logger = obs, log.logger()
	s := start(t, opts)
	advance := frozenClock(s)
	c := dial(t, s, "tcp")
	c.MustAllocate()
	denied := func(int) *net.UDPAddr { return &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 9} }

	wantAll(t, pipeline(t, c, permissions(c, requests, denied)), 403, "CreatePermission to a denied peer")
	if n := len(obs.Denied()); n != requests {
		t.Fatalf("%d refusals counted, want %d", n, requests)
	}
	const ours = "peer refused"
	wantBounded(t, log.matching(ours), ours, requests)

	advance(time.Second)
	wantAll(t, pipeline(t, c, permissions(c, 1, denied)), 403, "CreatePermission to a denied peer")
	wantSuppressed(t, log.matching(ours), ours, requests-server.LogLinesPerSecond)
}

// TestCapacityRefusalLinesAreBounded: CreatePermissions past
// limits.permissions_per_allocation, pipelined, are all answered 508 and
// counted, and make at most LogLinesPerSecond lines in a second.
func TestCapacityRefusalLinesAreBounded(t *testing.T) {
	const requests = 2000
	obs := &fakeObserver{}
	var log lineLog
	opts := testOptions()
	opts.Observer, opts.Logger = obs, log.logger()
	opts.Config.Limits.PermissionsPerAllocation = 1
	s := start(t, opts)
	advance := frozenClock(s)
	c := dial(t, s, "tcp")
	c.MustAllocate()
	if code := c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}); code != 0 {
		t.Fatalf("first permission: %d", code)
	}
	other := func(i int) *net.UDPAddr {
		return &net.UDPAddr{IP: net.IPv4(127, 0, byte(i>>8), byte(2+i%250)), Port: 9}
	}

	wantAll(t, pipeline(t, c, permissions(c, requests, other)), 508, "CreatePermission past the cap")
	if n := len(obs.Denied()); n != requests {
		t.Fatalf("%d refusals counted, want %d", n, requests)
	}
	const line = "permission, channel or connect refused: allocation at its cap"
	wantBounded(t, log.matching(line), line, requests)

	advance(time.Second)
	wantAll(t, pipeline(t, c, permissions(c, 1, other)), 508, "CreatePermission past the cap")
	wantSuppressed(t, log.matching(line), line, requests-server.LogLinesPerSecond)
}

// TestAllocateRefusalLinesAreBounded: Allocates refused 486, past
// limits.user_allocations or while draining, are all counted and make at
// most LogLinesPerSecond lines in a second; the next second's line says how
// many were held back.
func TestAllocateRefusalLinesAreBounded(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		configure  func(*server.Options)
		before     bool // one allocation first, which the quota keeps
	}{
		{"quota", "allocation refused", func(o *server.Options) { o.Config.Limits.UserAllocations = 1 }, true},
		{"draining", "allocation refused: draining", func(o *server.Options) { o.Table = server.NewTable(o.Config); o.Table.StopAdmitting() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const clients = 100
			obs := &fakeObserver{}
			var log lineLog
			opts := testOptions()
			opts.Observer, opts.Logger = obs, log.logger()
			tc.configure(&opts)
			s := start(t, opts)
			advance := frozenClock(s)
			if tc.before {
				dial(t, s, "udp").MustAllocate()
			}
			refuse := func() {
				t.Helper()
				c := dial(t, s, "udp")
				if code := testturn.ErrorCode(c.Allocate()); code != 486 {
					t.Fatalf("Allocate answered %d, want 486", code)
				}
				c.Close()
			}
			for range clients {
				refuse()
			}
			if n := len(obs.Rejected()); n != clients {
				t.Fatalf("%d refusals counted, want %d", n, clients)
			}
			wantBounded(t, log.matching(tc.line), tc.line, clients)

			advance(time.Second)
			refuse()
			wantSuppressed(t, log.matching(tc.line), tc.line, clients-server.LogLinesPerSecond)
		})
	}
}
