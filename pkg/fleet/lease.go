package fleet

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/turnd/turnd/pkg/drain"
)

// renewScript is one heartbeat: it extends this node's lease (Redis's clock,
// so skewed node clocks agree), prunes dead nodes from the live set,
// writes the node's published state, and renews the TTLs of the keys this
// node counts in. It says whether the lease had lapsed or was never there
// (others may have deleted this node's fields; Redis may have been flushed)
// and whether the sessions key is missing.
//
// KEYS: nodes, node:{name}, total, sessions:{name}, users:{user}….
// ARGV: name, lease ms, state, allocations, bps, uris JSON, "1" if the
// sessions JSON follows, sessions JSON.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
local old = redis.call('ZSCORE', KEYS[1], ARGV[1])
local lost = 0
if not old or tonumber(old) <= now then lost = 1 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('HSET', KEYS[2], 'state', ARGV[3], 'allocations', ARGV[4], 'bps', ARGV[5], 'uris', ARGV[6], 'updated', now)
redis.call('PEXPIRE', KEYS[2], lease)
redis.call('PEXPIRE', KEYS[3], lease)
local missing = 0
if ARGV[7] == '1' then
  redis.call('SET', KEYS[4], ARGV[8], 'PX', lease)
elseif redis.call('PEXPIRE', KEYS[4], lease) == 0 then
  missing = 1
end
for i = 5, #KEYS do redis.call('PEXPIRE', KEYS[i], lease) end
return {lost, missing}
`)

// rebuildScript writes this node's counts absolutely: the user keys'
// fields and its total field (a count of 0 deletes the field).
//
// KEYS: total, users:{user}…. ARGV: node, lease ms, total, one count per
// user key.
var rebuildScript = redis.NewScript(`
local function put(key, n)
  if n > 0 then
    redis.call('HSET', key, ARGV[1], n)
    redis.call('PEXPIRE', key, ARGV[2])
  else
    redis.call('HDEL', key, ARGV[1])
  end
end
put(KEYS[1], tonumber(ARGV[3]))
for i = 2, #KEYS do put(KEYS[i], tonumber(ARGV[i + 2])) end
return 0
`)

// heartbeat beats every Lease/3 while up and probes every second while
// down; it also reports transitions (OnChange) and does the work others
// wake it for (a rebuild, a changed revocation list).
func (c *Client) heartbeat() {
	defer c.liveWG.Done()
	reported := true // the Client starts up
	var t drain.Timer
	armedUp := false
	for {
		up, err, changed := c.state.watch()
		if up != reported {
			reported = up
			if c.opt.OnChange != nil {
				c.opt.OnChange(up, err)
			}
		}
		// Re-arm only when the timer fired or the mode changed: wake-ups
		// while down must not postpone the probe forever.
		if t == nil || armedUp != up {
			if t != nil {
				t.Stop()
			}
			every := c.opt.Lease / 3
			if !up {
				every = probeEvery
			}
			t, armedUp = c.opt.Clock.NewTimer(every), up
		}
		fired := false
		select {
		case <-c.live.Done():
			t.Stop()
			return
		case <-changed:
			continue
		case <-c.wakeBeat:
			up = c.state.isUp()
		case <-t.C():
			fired = true
			t = nil
		}
		switch {
		case up:
			ctx, cancel := opContext(c.live, c.opTimeout())
			_ = c.beat(ctx) // a failure marks the Client down; the probe takes over
			cancel()
		case fired:
			_ = c.probe() // down until it succeeds
		}
	}
}

// beat renews the lease and, when Redis may disagree with this node's
// counts, rewrites them. The periodic beat does not rewrite counts blindly:
// an absolute write would race an Admit in flight on another connection.
func (c *Client) beat(ctx context.Context) error {
	if !c.forgot.Load() {
		if err := c.forget(ctx); err != nil {
			return err
		}
		c.forgot.Store(true)
	}
	lost, missing, err := c.renew(ctx)
	if err != nil {
		return err
	}
	if lost || c.counts.isDirty() {
		if err := c.rebuild(ctx); err != nil {
			return err
		}
	}
	if lost {
		c.revoked.markUnwritten()
	}
	if lost || missing {
		c.pub.unwritten()
		if _, _, err := c.renew(ctx); err != nil {
			return err
		}
	}
	if err := c.syncRevoked(ctx); err != nil {
		return err
	}
	return c.exchangeRates(ctx)
}

func (c *Client) renew(ctx context.Context) (lost, missing bool, err error) {
	st := c.pub.snapshot()
	users := c.counts.heldUsers()
	k := c.keys
	keys := make([]string, 0, 4+len(users))
	keys = append(keys, k.nodes(), k.node(c.opt.Node), k.total(), k.sessions(c.opt.Node))
	for _, u := range users {
		keys = append(keys, k.user(u))
	}
	withSessions := "0"
	if st.sessions != nil {
		withSessions = "1"
	}
	res, err := renewScript.Run(ctx, c.rdb, keys, c.opt.Node, c.opt.Lease.Milliseconds(),
		st.state, st.allocations, st.bps, st.uris, withSessions, string(st.sessions)).Int64Slice()
	if err != nil {
		return false, false, c.fail(ctx, "renew lease", err)
	}
	if len(res) != 2 {
		return false, false, c.fail(ctx, "renew lease", fmt.Errorf("unexpected reply %v", res))
	}
	if st.sessions != nil {
		c.pub.written(st.gen)
	}
	return res[0] == 1, res[1] == 1, nil
}

// rebuild rewrites this node's counts in Redis from its own truth. Admits
// fail fast (ErrUnavailable) while it holds books: they would race it.
func (c *Client) rebuild(ctx context.Context) error {
	c.counts.books.Lock()
	defer c.counts.books.Unlock()
	users, n, total := c.counts.snapshot()
	k := c.keys
	keys := make([]string, 0, 1+len(users))
	keys = append(keys, k.total())
	args := make([]any, 0, 3+len(users))
	args = append(args, c.opt.Node, c.opt.Lease.Milliseconds(), total)
	for i, u := range users {
		keys = append(keys, k.user(u))
		args = append(args, n[i])
	}
	if err := rebuildScript.Run(ctx, c.rdb, keys, args...).Err(); err != nil {
		c.counts.markDirty()
		return c.fail(ctx, "rebuild counts", err)
	}
	c.counts.rebuilt(users, n)
	return nil
}

// leave removes this node from the fleet at once: a clean stop releases
// its share without waiting for the lease. Its revocation list stays: the
// union covers stopped nodes too, so a revocation fails closed.
func (c *Client) leave(ctx context.Context) error {
	c.counts.books.Lock() // waits out an Admit in flight
	defer c.counts.books.Unlock()
	users, _, _ := c.counts.snapshot()
	k, name := c.keys, c.opt.Node
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, k.nodes(), name)
		p.HDel(ctx, k.total(), name)
		for _, u := range users {
			p.HDel(ctx, k.user(u), name)
		}
		p.Del(ctx, k.node(name), k.sessions(name), k.rates(name))
		return nil
	})
	if err != nil {
		return fmt.Errorf("leave fleet: %w", err)
	}
	return nil
}

// scanCount is how many keys one SCAN step asks for.
const scanCount = 1000

// forget deletes every count Redis holds for this node's name, once,
// before the node's first counts are written: a node that crashed and
// came back under the same name within its lease would otherwise inherit
// its old share, which no rebuild knows to delete. A scan cut short by
// its deadline goes on from where it stopped at the next attempt, so a
// large keyspace costs a few probes, not every one.
func (c *Client) forget(ctx context.Context) error {
	c.counts.books.Lock()
	defer c.counts.books.Unlock()
	name := c.opt.Node
	match := globEscape(c.keys.prefix) + "users:*"
	cursor := &c.forgetAt
	for {
		keys, next, err := c.rdb.Scan(ctx, *cursor, match, scanCount).Result()
		if err != nil {
			return c.fail(ctx, "forget old counts", err)
		}
		if len(keys) > 0 {
			_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range keys {
					p.HDel(ctx, k, name)
				}
				return nil
			})
			if err != nil {
				return c.fail(ctx, "forget old counts", err)
			}
		}
		if *cursor = next; next == 0 {
			break
		}
	}
	c.counts.markDirty() // the rebuild writes the total and the books' counts
	return nil
}

// globEscape quotes the characters SCAN's MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
