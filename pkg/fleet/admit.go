package fleet

import (
	"context"
	"fmt"
	"maps"

	"github.com/redis/go-redis/v9"
)

// admitScript counts a user's and the fleet's allocations on the live
// nodes and takes one more for this node if both limits allow it, in one
// step so two nodes admitting at once cannot both take the last one.
// Fields of nodes whose lease has passed are deleted on the way: a dead
// node's share is released the moment anyone looks.
//
// KEYS: nodes, users:{user}, total. ARGV: node, user limit, total limit
// (0 = none), lease in ms. Returns 0 (admitted), 1 (user quota), 2 (total).
var admitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function live(node)
  if node == ARGV[1] then return true end
  local s = redis.call('ZSCORE', KEYS[1], node)
  return s and tonumber(s) > now
end
local function sum(key)
  local kv = redis.call('HGETALL', key)
  local n = 0
  for i = 1, #kv, 2 do
    if live(kv[i]) then n = n + tonumber(kv[i + 1]) else redis.call('HDEL', key, kv[i]) end
  end
  return n
end
local ul, tl = tonumber(ARGV[2]), tonumber(ARGV[3])
if ul > 0 and sum(KEYS[2]) + 1 > ul then return 1 end
if tl > 0 and sum(KEYS[3]) + 1 > tl then return 2 end
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 0
`)

// deltaScript applies this node's queued Hold and Release changes, never
// taking a count below zero (a zero field is deleted).
//
// KEYS: total, users:{user}…. ARGV: node, lease in ms, total delta, then
// one delta per user key.
var deltaScript = redis.NewScript(`
local function apply(key, d)
  local v = redis.call('HINCRBY', key, ARGV[1], d)
  if v <= 0 then redis.call('HDEL', key, ARGV[1]) else redis.call('PEXPIRE', key, ARGV[2]) end
end
apply(KEYS[1], tonumber(ARGV[3]))
for i = 2, #KEYS do apply(KEYS[i], tonumber(ARGV[i + 2])) end
return 0
`)

// Admit takes one of user's fleet-wide allocations for this node: one
// Redis round trip (two the first time after Redis lost its scripts),
// bounded by Options.Timeout. userLimit and
// totalLimit of 0 mean no limit. It returns nil (one count held: Release it
// when the allocation ends or is not made after all), ErrUserQuota,
// ErrTotalQuota (nothing held), or an error wrapping ErrUnavailable
// (nothing held; a caller that admits anyway by its fallback rule calls
// Hold). While the Client is down it returns at once. A ctx that ends
// first (its own deadline shorter than Timeout) returns its error, and
// leaves the Client up: the caller gave up, Redis did not fail.
func (c *Client) Admit(ctx context.Context, user string, userLimit, totalLimit int) error {
	if c.live.Err() != nil {
		return fmt.Errorf("admit %q: %w", user, ErrClosed)
	}
	if !c.state.isUp() {
		return fmt.Errorf("admit %q: %w: redis is down", user, ErrUnavailable)
	}
	// A rebuild holds books exclusively while it rewrites this node's
	// counts; an Admit then would race its absolute writes, and waiting
	// for it could outlast Timeout, so the caller falls back instead.
	if !c.counts.books.TryRLock() {
		return fmt.Errorf("admit %q: %w: counts being rebuilt", user, ErrUnavailable)
	}
	defer c.counts.books.RUnlock()
	actx, cancel := opContext(ctx, c.opt.Timeout)
	defer cancel()
	k := c.keys
	res, err := admitScript.Run(actx, c.rdb, []string{k.nodes(), k.user(user), k.total()},
		c.opt.Node, userLimit, totalLimit, c.opt.Lease.Milliseconds()).Int()
	if err != nil {
		// The script may have run: only a rebuild knows the count again
		// (the probe's, if the Client went down; else the next beat's).
		c.counts.unknown(user)
		err = c.fail(actx, fmt.Sprintf("admit %q", user), err)
		if c.state.isUp() {
			wake(c.wakeBeat)
		}
		return err
	}
	switch res {
	case 0:
		c.counts.add(user, 0)
		return nil
	case 1:
		return fmt.Errorf("admit %q: %w (%d)", user, ErrUserQuota, userLimit)
	default:
		return fmt.Errorf("admit %q: %w (%d)", user, ErrTotalQuota, totalLimit)
	}
}

// Hold counts an allocation this node admitted without the fleet (Admit
// returned ErrUnavailable and the fallback rule let it in), so the fleet
// counts it once Redis is back. Release it like an admitted one.
func (c *Client) Hold(user string) {
	if c.retired.Load() {
		return
	}
	c.counts.add(user, 1)
	wake(c.wakeSend)
}

// Release gives back one of user's counts on this node. It never waits:
// the change is written in the background (and rebuilt after an outage
// anyway). A Release for a user with no count here is ignored.
func (c *Client) Release(user string) {
	if c.retired.Load() {
		return
	}
	if c.counts.release(user) {
		wake(c.wakeSend)
	}
}

// sendDeltas writes the queued Hold and Release changes in one round trip.
// While the Client is down they are dropped: the rebuild that brings it up
// writes the absolute counts, which include them.
func (c *Client) sendDeltas(ctx context.Context) error {
	c.counts.books.RLock()
	defer c.counts.books.RUnlock()
	users, total := c.counts.takeDeltas()
	if len(users) == 0 && total == 0 {
		return nil
	}
	if !c.state.isUp() {
		c.counts.markDirty()
		return nil
	}
	keys := []string{c.keys.total()}
	args := []any{c.opt.Node, c.opt.Lease.Milliseconds(), total}
	for u, d := range maps.All(users) {
		if d == 0 {
			continue
		}
		keys = append(keys, c.keys.user(u))
		args = append(args, d)
	}
	ctx, cancel := opContext(ctx, c.opTimeout())
	defer cancel()
	if err := deltaScript.Run(ctx, c.rdb, keys, args...).Err(); err != nil {
		c.counts.markDirty()
		return c.fail(ctx, "write released counts", err)
	}
	return nil
}
