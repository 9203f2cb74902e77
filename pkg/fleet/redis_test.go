package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/turnd/turnd/internal/redistest"
)

// redisServer is the test's redis-server, with the package's own helpers.
type redisServer struct {
	*redistest.Server
	t *testing.T
}

func startRedis(t *testing.T, extra ...string) *redisServer {
	t.Helper()
	return &redisServer{Server: redistest.Start(t, extra...), t: t}
}

func startRedisOn(t *testing.T, ports func() int, extra ...string) *redisServer {
	t.Helper()
	return &redisServer{Server: redistest.StartOn(t, ports, extra...), t: t}
}

func freePort(t *testing.T) int { return redistest.FreePort(t) }

func (r *redisServer) admin() *redis.Client { return r.Admin() }
func (r *redisServer) start()               { r.Restart() }
func (r *redisServer) stop()                { r.Stop() }
func (r *redisServer) pause()               { r.Pause() }
func (r *redisServer) resume()              { r.Resume() }

// open starts a Client on the server with test-friendly defaults, unless o
// sets them: a short lease, and an Admit deadline a loaded runner meets
// (a test about that deadline sets its own). It is closed at the test's end.
func (r *redisServer) open(o Options) *Client {
	r.t.Helper()
	if o.URL == "" {
		o.URL = r.URL
	}
	if o.Lease == 0 {
		o.Lease = testLease
	}
	if o.Timeout == 0 {
		o.Timeout = testTimeout
	}
	if o.Prefix == "" {
		o.Prefix = "t:"
	}
	c, err := Open(context.Background(), o)
	if err != nil {
		r.t.Fatalf("open %s: %v", o.Node, err)
	}
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// testLease is short, so that lapses are waited for in well under a second.
const testLease = 600 * time.Millisecond

// testTimeout is Admit's deadline where the deadline is not the subject.
const testTimeout = 2 * time.Second

// eventually polls cond every few milliseconds until it holds, failing the
// test after within: for what Redis gets in the background, or a lease
// running out, there is no event to wait on.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustAdmit fails the test unless Admit returns want (errors.Is).
func mustAdmit(t *testing.T, c *Client, user string, userLimit, totalLimit int, want error) {
	t.Helper()
	err := c.Admit(ctxT(t), user, userLimit, totalLimit)
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("%s: Admit(%s, %d, %d) = %v, want %v", c.Node(), user, userLimit, totalLimit, err, want)
	}
}
