package fleet

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ratesScript is one beat's exchange of per-user bit rates: it replaces
// this node's rates hash (zero rates are not written) and sums, for each
// user asked, the rates the other live nodes' hashes hold. One round trip
// whatever the number of nodes and users; like the other scripts it needs
// a single Redis, not a Cluster (the other nodes' keys are named from the
// live set).
//
// KEYS: nodes, rates:{name}. ARGV: name, lease ms, rates key prefix, n,
// then n user/rate pairs to write, then the users to read. Returns one sum
// per user read.
var ratesScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local chunk = 1000
local n = tonumber(ARGV[4])
redis.call('DEL', KEYS[2])
for i = 5, 4 + 2 * n, 2 * chunk do
  redis.call('HSET', KEYS[2], unpack(ARGV, i, math.min(i + 2 * chunk - 1, 4 + 2 * n)))
end
if n > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
local first = 5 + 2 * n
local sums = {}
for i = first, #ARGV do sums[#sums + 1] = 0 end
if #sums == 0 then return sums end
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')
for _, node in ipairs(live) do
  if node ~= ARGV[1] then
    for i = first, #ARGV, chunk do
      local last = math.min(i + chunk - 1, #ARGV)
      local v = redis.call('HMGET', ARGV[3] .. node, unpack(ARGV, i, last))
      for j, x in ipairs(v) do
        if x then sums[i - first + j] = sums[i - first + j] + tonumber(x) end
      end
    end
  end
end
return sums
`)

// rateBook holds this node's per-user rates for the next beat and the
// other live nodes' sums as the last beat read them.
type rateBook struct {
	mu      sync.Mutex
	mine    map[string]uint64 // nil: never published
	written bool              // Redis holds mine as it is now
	others  atomic.Pointer[map[string]uint64]
}

// PublishRates sets the relayed bit rates, per user, that this node's next
// heartbeat writes to the fleet; it never waits on Redis. The users in it
// are also the ones whose other nodes' rates that heartbeat reads back for
// OthersRate: list every user with a fleet-wide bandwidth limit and
// allocations here, at 0 if idle. The map is copied.
func (c *Client) PublishRates(rates map[string]uint64) {
	m := maps.Clone(rates)
	if m == nil {
		m = map[string]uint64{}
	}
	c.rates.mu.Lock()
	defer c.rates.mu.Unlock()
	c.rates.mine, c.rates.written = m, false
}

// OthersRate returns the sum of the rates the other live nodes published
// for user, as of this node's last heartbeat; it reads memory only. It is
// 0 while the Client is down, and for a user not in the rates published
// before that heartbeat.
func (c *Client) OthersRate(user string) uint64 {
	if !c.state.isUp() {
		return 0
	}
	if m := c.rates.others.Load(); m != nil {
		return (*m)[user]
	}
	return 0
}

// exchangeRates writes this node's rates and reads the others' sums, in
// one round trip; nothing when no rates were ever published, or when they
// are all written and none need reading.
func (c *Client) exchangeRates(ctx context.Context) error {
	r := &c.rates
	r.mu.Lock()
	mine, written := r.mine, r.written
	r.mu.Unlock()
	if mine == nil || written && len(mine) == 0 {
		return nil
	}
	users := slices.Sorted(maps.Keys(mine))
	args := make([]any, 0, 4+3*len(users))
	args = append(args, c.opt.Node, c.opt.Lease.Milliseconds(), c.keys.rates(""), 0)
	n := 0
	for _, u := range users {
		if bps := mine[u]; bps > 0 {
			args = append(args, u, strconv.FormatUint(bps, 10))
			n++
		}
	}
	args[3] = n
	for _, u := range users {
		args = append(args, u)
	}
	sums, err := ratesScript.Run(ctx, c.rdb, []string{c.keys.nodes(), c.keys.rates(c.opt.Node)}, args...).Int64Slice()
	if err == nil && len(sums) != len(users) {
		err = fmt.Errorf("unexpected reply of %d sums for %d users", len(sums), len(users))
	}
	if err != nil {
		r.others.Store(nil) // stale sums would hold this node's users down for nothing
		return c.fail(ctx, "exchange rates", err)
	}
	others := make(map[string]uint64, len(users))
	for i, u := range users {
		if sums[i] > 0 {
			others[u] = uint64(sums[i])
		}
	}
	r.others.Store(&others)
	r.mu.Lock()
	if maps.Equal(r.mine, mine) {
		r.written = true
	}
	r.mu.Unlock()
	return nil
}

// rates is the hash of a node's per-user bit rates; name "" gives the
// prefix the script completes with each node's name.
func (k keys) rates(name string) string { return k.prefix + "rates:" + name }
