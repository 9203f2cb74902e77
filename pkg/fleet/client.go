package fleet

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/turnd/turnd/pkg/drain"
)

// Defaults of Options' zero fields.
const (
	DefaultPrefix   = "turnd:"
	DefaultLease    = 10 * time.Second
	DefaultTimeout  = 250 * time.Millisecond
	DefaultUsageMax = 100000
)

// probeEvery is how often a down Client tries Redis again.
const probeEvery = time.Second

// Options configure a Client. Only URL and Node are required.
type Options struct {
	// URL is redis://[user:password@]host[:port][/db] or rediss://… for
	// TLS; the ACL user and password come from it.
	URL string
	// TLS, for a rediss:// URL, replaces the default (system roots, server
	// name from the URL), e.g. to trust a private CA. Nil means the default.
	TLS *tls.Config
	// Node is this node's name in the fleet; required, unique per node.
	Node string
	// Prefix starts every key and channel. Empty means DefaultPrefix.
	Prefix string
	// Lease is how long the node's share counts without a heartbeat (beats
	// come every Lease/3). Zero means DefaultLease.
	Lease time.Duration
	// Timeout is Admit's deadline on Redis. Zero means DefaultTimeout.
	Timeout time.Duration
	// UsageMax caps the usage stream (approximately, MAXLEN ~) and the
	// records waiting in memory for it (while Redis is down, or slower
	// than they come). Zero means DefaultUsageMax.
	UsageMax int
	// OnChange, if set, is told of every transition between up and down
	// (err says why it went down). The Client starts up; an Open that
	// cannot reach Redis reports down. Called from the Client's heartbeat
	// goroutine: it must not block.
	OnChange func(up bool, err error)
	// OnDisconnect, if set, is told that node asked every node (this one
	// included) to end user's allocations. Called from the Client's
	// subscriber goroutine: it must not block.
	OnDisconnect func(user, node string)
	// OnRevoked, if set, is told the union of every node's revoked users
	// whenever it changes (first by Open, if the fleet already revokes
	// some). Called from Open or the heartbeat goroutine: it must not block.
	OnRevoked func(users []string)
	// State, if set, is the node's state in its first beat, which Open
	// writes before it returns: a node is placeable as soon as it serves.
	State *NodeState
	// Clock makes the heartbeat's and the probe's timers. Nil means
	// drain.SystemClock(); tests use a fake one to beat on demand. Lease
	// expiry is Redis's clock, not this one.
	Clock drain.Clock
}

// Client is one node's connection to the fleet. It is safe for concurrent
// use; Close stops everything it started.
type Client struct {
	opt   Options
	rdb   *redis.Client
	keys  keys
	state outage

	counts   counts
	usage    usageQueue
	pub      published
	revoked  revocation
	rates    rateBook
	wakeBeat chan struct{} // the heartbeat has work before its timer
	wakeSend chan struct{} // the writer has queued work
	sub      *redis.PubSub
	forgot   atomic.Bool // forget ran: Redis holds no counts of an earlier run
	forgetAt uint64      // forget's SCAN cursor (under counts.books)

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	close  sync.Once

	// live is cancelled by Retire (and Close): the heartbeat and the
	// subscriber run under it, the writer under ctx.
	live       context.Context
	liveCancel context.CancelFunc
	liveWG     sync.WaitGroup
	retired    atomic.Bool
	retire     sync.Once
}

// Open checks the options, connects, and starts the heartbeat, the
// subscriber and the writer. Redis being down is not an error: the Client
// starts down (OnChange says so) and keeps probing.
func Open(ctx context.Context, o Options) (*Client, error) {
	ro, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{
		opt:      o,
		rdb:      redis.NewClient(ro),
		keys:     keys{prefix: o.Prefix},
		wakeBeat: make(chan struct{}, 1),
		wakeSend: make(chan struct{}, 1),
	}
	c.state.init()
	c.counts.init()
	c.usage.max = o.UsageMax
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.live, c.liveCancel = context.WithCancel(c.ctx)

	// The first beat registers the node (and writes its empty counts)
	// before Open returns, so a caller's first Admit already counts here.
	if o.State != nil {
		c.pub.set(o.Node, *o.State)
	}
	bctx, cancel := opContext(ctx, c.opTimeout())
	err = c.beat(bctx)
	cancel()
	if err != nil {
		c.state.down(err)
	}
	c.sub = c.subscribe(ctx)
	c.liveWG.Add(2)
	go c.heartbeat()
	go c.listen(c.sub)
	c.wg.Add(1)
	go c.send()
	return c, nil
}

func (o *Options) withDefaults() (*redis.Options, error) {
	if o.Node == "" {
		return nil, fmt.Errorf("open fleet: node name: %w", ErrOptions)
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.UsageMax <= 0 {
		o.UsageMax = DefaultUsageMax
	}
	if o.Clock == nil {
		o.Clock = drain.SystemClock()
	}
	ro, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("open fleet: parse redis URL: %w: %w", ErrOptions, err)
	}
	if o.TLS != nil {
		if ro.TLSConfig == nil {
			return nil, fmt.Errorf("open fleet: TLS config for a redis:// URL (want rediss://): %w", ErrOptions)
		}
		t := o.TLS.Clone()
		if t.ServerName == "" {
			t.ServerName = ro.TLSConfig.ServerName
		}
		ro.TLSConfig = t
	}
	// CLIENT LIST shows who is who; Redis refuses a name with spaces or
	// non-ASCII, and a refused name would fail every connection.
	ro.ClientName = "turnd-" + strings.Map(func(r rune) rune {
		if r < '!' || r > '~' {
			return '_'
		}
		return r
	}, o.Node)
	// Every call here has its own deadline and its own retry (the next
	// beat, the probe, the caller's fallback); the client's retries would
	// only stretch a failure past those deadlines.
	ro.MaxRetries = -1
	ro.DialerRetries = 1
	ro.ContextTimeoutEnabled = true
	// A plain Redis has no maintenance notifications; asking for them only
	// costs a round trip on every new connection.
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return ro, nil
}

// opTimeout bounds every background call: a beat must end before the next.
func (c *Client) opTimeout() time.Duration { return c.opt.Lease / 3 }

// Node returns this node's name.
func (c *Client) Node() string { return c.opt.Node }

// Close stops the Client's goroutines, writes the usage records still
// queued, and removes the node from the fleet at once (its share is
// released without waiting for the lease). It returns within about
// Lease/3 of its call even if Redis does not answer.
func (c *Client) Close() error { return c.stop(true) }

// Detach is Close for a node whose successor under the same name took its
// allocations over (a hand-over): the queued usage is written, but the
// node's entries stay for the successor, which rewrites them as its own.
func (c *Client) Detach() error { return c.stop(false) }

// Retire is for a node whose successor under the same name took over
// (a hand-over) while some allocations stay here to drain: the heartbeat
// and the subscription stop, Hold, Release and Admit do nothing more
// (the successor's counts are the node's now), and usage records are
// still written until Detach, retried every second while Redis fails
// (no heartbeat probes it any more). It does not wait: a beat in flight
// is cancelled.
func (c *Client) Retire() {
	c.retired.Store(true)
	c.liveCancel()
}

// stopLive stops the heartbeat and the subscriber, once.
func (c *Client) stopLive() {
	c.retire.Do(func() {
		c.liveCancel()
		_ = c.sub.Close() // unblocks listen's receive
		c.liveWG.Wait()
	})
}

func (c *Client) stop(leave bool) error {
	err := ErrClosed
	c.close.Do(func() {
		c.state.close()
		c.stopLive()
		c.cancel()
		c.wg.Wait()
		ctx, cancel := opContext(context.Background(), c.opTimeout())
		defer cancel()
		err = nil
		if c.state.isUp() || c.retired.Load() { // a retired Client has no probe to bring it up
			if ferr := c.flushUsage(ctx); ferr != nil {
				err = ferr
			}
			if leave {
				if lerr := c.leave(ctx); lerr != nil && err == nil {
					err = lerr
				}
			}
		} else if n, _ := c.usage.stats(); n > 0 {
			// Billing loses these: the caller's log line must say so.
			err = fmt.Errorf("close fleet: %d usage records not written: %w", n, ErrUnavailable)
		}
		if cerr := c.rdb.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close redis client: %w", cerr)
		}
	})
	return err
}

// wake sends a coalesced signal on ch.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // a signal is pending; it covers this one too
	}
}

// keys names everything the fleet keeps in Redis.
type keys struct{ prefix string }

func (k keys) nodes() string               { return k.prefix + "nodes" }
func (k keys) node(name string) string     { return k.prefix + "node:" + name }
func (k keys) user(user string) string     { return k.prefix + "users:" + user }
func (k keys) total() string               { return k.prefix + "total" }
func (k keys) sessions(name string) string { return k.prefix + "sessions:" + name }
func (k keys) revoked(name string) string  { return k.prefix + "revoked:" + name }
func (k keys) revokers() string            { return k.prefix + "revokers" }
func (k keys) control() string             { return k.prefix + "control" }
func (k keys) usage() string               { return k.prefix + "usage" }

// Stats is the Client's state for /status and metrics.
type Stats struct {
	Up           bool   // Redis usable; false while Admit falls back
	Err          error  // why it is down; nil while up
	Outages      uint64 // transitions to down since Open
	Held         int    // this node's allocations the fleet counts
	UsageQueued  int    // usage records not yet in the stream
	UsageDropped uint64 // usage records dropped: the queue was full while down
}

// Stats returns the Client's current state.
func (c *Client) Stats() Stats {
	s := Stats{Up: c.state.isUp()}
	c.state.mu.Lock()
	s.Outages, s.Err = c.state.downs, c.state.err
	c.state.mu.Unlock()
	c.counts.mu.Lock()
	s.Held = c.counts.total
	c.counts.mu.Unlock()
	s.UsageQueued, s.UsageDropped = c.usage.stats()
	return s
}
