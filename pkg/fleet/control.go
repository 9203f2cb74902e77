package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Control message operations on the {prefix}control channel.
const (
	opDisconnect = "disconnect"
	opRevoked    = "revoked"
)

// controlMessage is what goes over the control channel: no secret, only
// who to end and who asked.
type controlMessage struct {
	Op   string `json:"op"`
	User string `json:"user,omitempty"`
	By   string `json:"by"`
}

// Disconnect asks every live node, this one included, to end user's
// allocations (each calls its Options.OnDisconnect). A node that is not
// subscribed at that moment (Redis down there) misses it: the error says
// only whether Redis took the message.
func (c *Client) Disconnect(ctx context.Context, user string) error {
	if err := c.publish(ctx, controlMessage{Op: opDisconnect, User: user, By: c.opt.Node}); err != nil {
		return fmt.Errorf("disconnect %q: %w", user, err)
	}
	return nil
}

func (c *Client) publish(ctx context.Context, m controlMessage) error {
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	ctx, cancel := opContext(ctx, c.opTimeout())
	defer cancel()
	msg, _ := json.Marshal(m) // strings always encode
	if err := c.rdb.Publish(ctx, c.keys.control(), msg).Err(); err != nil {
		return c.fail(ctx, "publish", err)
	}
	return nil
}

// subscribe joins the control channel, waiting (within ctx and a beat's
// time) for Redis to confirm, so that a Disconnect right after Open
// reaches this node. If Redis is down, listen keeps trying.
func (c *Client) subscribe(ctx context.Context) *redis.PubSub {
	ctx, cancel := opContext(ctx, c.opTimeout())
	defer cancel()
	// The PubSub keeps the channel even when this first SUBSCRIBE fails,
	// and subscribes again on its next connection.
	ps := c.rdb.Subscribe(ctx, c.keys.control())
	if c.state.isUp() {
		if _, err := ps.ReceiveTimeout(ctx, c.opTimeout()); err != nil {
			c.fail(ctx, "subscribe to control messages", err)
		}
	}
	return ps
}

// listen handles control messages until Close closes ps. A connection that
// answers nothing, not even a ping, for two beats counts as down.
func (c *Client) listen(ps *redis.PubSub) {
	defer c.liveWG.Done()
	quiet := 0
	for {
		msg, err := ps.ReceiveTimeout(c.live, c.opt.Lease/3)
		if c.live.Err() != nil {
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && quiet == 0 {
			quiet++
			err = ps.Ping(c.live)
			if err == nil {
				continue
			}
		}
		if err != nil {
			c.fail(c.live, "receive control messages", err)
			if !c.waitUp() {
				return
			}
			quiet = 0
			continue
		}
		quiet = 0
		switch m := msg.(type) {
		case *redis.Subscription:
			// (Re)subscribed: a revocation may have been announced while
			// this node was not listening.
			wake(c.wakeBeat)
		case *redis.Message:
			c.handle(m.Payload)
		}
	}
}

// waitUp blocks until the Client is up; false if it closed first.
func (c *Client) waitUp() bool {
	for {
		up, _, changed := c.state.watch()
		if up {
			return true
		}
		select {
		case <-changed:
		case <-c.live.Done():
			return false
		}
	}
}

func (c *Client) handle(payload string) {
	var m controlMessage
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		return // not ours to understand: another version may add operations
	}
	switch m.Op {
	case opDisconnect:
		if m.User != "" && c.opt.OnDisconnect != nil {
			c.opt.OnDisconnect(m.User, m.By)
		}
	case opRevoked:
		wake(c.wakeBeat)
	}
}

// SetRevoked replaces this node's revoked users (its auth.revoked_users).
// It never waits: the next beat writes the list and tells the other nodes.
func (c *Client) SetRevoked(users []string) {
	if c.revoked.setOwn(users) {
		wake(c.wakeBeat)
	}
}

// Revoked returns the union of every node's revoked users, live or not,
// as last read from Redis, and this node's own list.
func (c *Client) Revoked() []string {
	return c.revoked.union()
}

// revocation is this node's list and the fleet's union as last read.
type revocation struct {
	mu       sync.Mutex
	own      []string // sorted, without duplicates
	ownGen   uint64   // bumped by every change of own
	wroteGen uint64   // the ownGen Redis holds
	remote   []string // the union Redis held at the last read
	reported []string // what OnRevoked was last told
}

func normalize(users []string) []string {
	u := slices.Clone(users)
	slices.Sort(u)
	return slices.Compact(u)
}

func (r *revocation) setOwn(users []string) bool {
	users = normalize(users)
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Equal(users, r.own) && r.ownGen != 0 {
		return false
	}
	r.own = users
	r.ownGen++
	return true
}

// markUnwritten makes the next sync write this node's list again (Redis
// may have lost it).
func (r *revocation) markUnwritten() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ownGen != 0 {
		r.wroteGen = 0
	}
}

func (r *revocation) union() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return normalize(append(slices.Clone(r.own), r.remote...))
}

// syncRevoked writes this node's list if it changed (and announces it),
// then reads the fleet's union and tells OnRevoked if it changed.
func (c *Client) syncRevoked(ctx context.Context) error {
	r := &c.revoked
	r.mu.Lock()
	own, gen, write := r.own, r.ownGen, r.ownGen != r.wroteGen
	r.mu.Unlock()
	k, name := c.keys, c.opt.Node
	if write {
		_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, k.revoked(name))
			if len(own) > 0 {
				p.SAdd(ctx, k.revoked(name), toAny(own)...)
				p.SAdd(ctx, k.revokers(), name)
			} else {
				p.SRem(ctx, k.revokers(), name)
			}
			msg, _ := json.Marshal(controlMessage{Op: opRevoked, By: name}) // strings always encode
			p.Publish(ctx, k.control(), msg)
			return nil
		})
		if err != nil {
			return c.fail(ctx, "write revoked users", err)
		}
		r.mu.Lock()
		r.wroteGen = gen
		r.mu.Unlock()
	}
	names, err := c.rdb.SMembers(ctx, k.revokers()).Result()
	if err != nil {
		return c.fail(ctx, "read revoked users", err)
	}
	var remote []string
	if len(names) > 0 {
		sets := make([]string, len(names))
		for i, n := range names {
			sets[i] = k.revoked(n)
		}
		if remote, err = c.rdb.SUnion(ctx, sets...).Result(); err != nil {
			return c.fail(ctx, "read revoked users", err)
		}
	}
	r.mu.Lock()
	r.remote = normalize(remote)
	u := normalize(append(slices.Clone(r.own), r.remote...))
	changed := !slices.Equal(u, r.reported)
	if changed {
		r.reported = u
	}
	r.mu.Unlock()
	if changed && c.opt.OnRevoked != nil {
		c.opt.OnRevoked(slices.Clone(u))
	}
	return nil
}

func toAny(s []string) []any {
	a := make([]any, len(s))
	for i, x := range s {
		a[i] = x
	}
	return a
}
