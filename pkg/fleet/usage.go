package fleet

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// usageBatch is how many records one round trip writes.
const usageBatch = 256

// Record is one ended allocation's usage, for billing. The fleet adds the
// node's name.
type Record struct {
	Allocation string // the session ID (its relayed address)
	User       string
	Client     string
	Transport  string
	Relay      string
	Reason     string // why it ended
	Start      time.Time
	Duration   time.Duration

	ToPeerBytes, ToPeerPackets     uint64
	FromPeerBytes, FromPeerPackets uint64
}

// Usage queues r for the usage stream ({prefix}usage, capped at about
// Options.UsageMax entries); it never waits. While Redis is down records
// wait in memory, at most UsageMax of them: past that the oldest are
// dropped and counted (Stats).
func (c *Client) Usage(r Record) {
	c.usage.push(r)
	wake(c.wakeSend)
}

// usageQueue holds records not yet in the stream.
type usageQueue struct {
	mu      sync.Mutex
	max     int
	recs    []Record
	dropped uint64
}

func (q *usageQueue) push(r Record) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.recs = append(q.recs, r)
	q.trimLocked()
}

func (q *usageQueue) take(n int) []Record {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.recs))
	batch := q.recs[:n:n]
	q.recs = q.recs[n:]
	return batch
}

// putBack returns a batch that could not be written to the queue's front.
func (q *usageQueue) putBack(batch []Record) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.recs = append(batch, q.recs...)
	q.trimLocked()
}

func (q *usageQueue) trimLocked() {
	if over := len(q.recs) - q.max; over > 0 {
		q.dropped += uint64(over)
		q.recs = append(q.recs[:0:0], q.recs[over:]...)
	}
}

func (q *usageQueue) stats() (queued int, dropped uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.recs), q.dropped
}

// send is the writer: queued count changes and usage records go out
// whenever they are queued and whenever Redis comes back.
func (c *Client) send() {
	defer c.wg.Done()
	for {
		up, _, changed := c.state.watch()
		ctx, cancel := opContext(c.ctx, c.opTimeout())
		_ = c.sendDeltas(ctx) // a failure marks the Client down
		var retry <-chan time.Time
		if up || c.retired.Load() {
			// A retired Client has no heartbeat to probe Redis: its
			// writer tries again itself while records wait.
			if err := c.flushUsage(ctx); err != nil && c.retired.Load() {
				retry = time.After(probeEvery)
			}
		}
		cancel()
		select {
		case <-c.ctx.Done():
			return
		case <-c.wakeSend:
		case <-changed:
		case <-retry:
		}
	}
}

// flushUsage writes the queued records, a batch per round trip, until the
// queue is empty or a write fails (the batch then goes back).
func (c *Client) flushUsage(ctx context.Context) error {
	for {
		batch := c.usage.take(usageBatch)
		if len(batch) == 0 {
			return nil
		}
		_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, r := range batch {
				p.XAdd(ctx, &redis.XAddArgs{
					Stream: c.keys.usage(),
					MaxLen: int64(c.opt.UsageMax),
					Approx: true,
					Values: c.fields(r),
				})
			}
			return nil
		})
		if err != nil {
			c.usage.putBack(batch)
			return c.fail(ctx, "write usage records", err)
		}
	}
}

// fields is a record as the stream entry's field-value pairs.
func (c *Client) fields(r Record) []any {
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	return []any{
		"node", c.opt.Node,
		"allocation", r.Allocation,
		"user", r.User,
		"client", r.Client,
		"transport", r.Transport,
		"relay", r.Relay,
		"reason", r.Reason,
		"start", r.Start.UTC().Format(time.RFC3339Nano),
		"duration_ms", strconv.FormatInt(r.Duration.Milliseconds(), 10),
		"to_peer_bytes", u(r.ToPeerBytes),
		"to_peer_packets", u(r.ToPeerPackets),
		"from_peer_bytes", u(r.FromPeerBytes),
		"from_peer_packets", u(r.FromPeerPackets),
	}
}
