package fleet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Node states as NodeState.State and Node.State say them.
const (
	StateServing  = "serving"
	StateDraining = "draining"
)

// NodeState is what this node tells the fleet about itself.
type NodeState struct {
	State       string   // StateServing or StateDraining; empty means serving
	Allocations int      // live allocations here
	BPS         uint64   // relayed bits per second, both ways
	URIs        []string // TURN URIs that reach this node (turn:host:port?transport=udp …)
	Sessions    []Session
}

// Session is one live allocation as the fleet lists it. Field names are a
// public interface (turnd sessions --fleet): add, never rename.
type Session struct {
	Node      string    `json:"node"` // set by the fleet from the publishing node
	ID        string    `json:"id"`   // the node's session ID (its relayed address)
	User      string    `json:"user"`
	Client    string    `json:"client"`
	Transport string    `json:"transport"`
	Relay     string    `json:"relay"`
	StartedAt time.Time `json:"started_at"`
}

// Node is one live node of the fleet.
type Node struct {
	Name        string
	State       string
	Allocations int
	BPS         uint64
	URIs        []string
	Updated     time.Time // its last heartbeat, Redis's clock
	Expires     time.Time // when its lease passes without another
}

// Publish sets what the next heartbeat writes about this node; it never
// waits on Redis. A change of State is written at once: a node that starts
// draining must stop being picked before the next beat.
func (c *Client) Publish(s NodeState) {
	if c.pub.set(c.opt.Node, s) {
		wake(c.wakeBeat)
	}
}

// published is the last NodeState, encoded once for the heartbeats.
type published struct {
	mu       sync.Mutex
	state    string
	allocs   int
	bps      uint64
	uris     string
	sessions []byte
	gen      uint64 // bumped when sessions change
	wrote    uint64 // the gen Redis holds
	missing  bool   // Redis holds no sessions for this node: write them
}

type pubSnapshot struct {
	state, uris string
	allocations int
	bps         uint64
	sessions    []byte // nil when Redis already holds them
	gen         uint64
}

// set stores s and reports whether its State differs from the last.
func (p *published) set(node string, s NodeState) (stateChanged bool) {
	st := s.State
	if st == "" {
		st = StateServing
	}
	uris, _ := json.Marshal(nonNil(s.URIs)) // strings always encode
	sessions := make([]Session, len(s.Sessions))
	for i, x := range s.Sessions {
		x.Node = node
		sessions[i] = x
	}
	enc, _ := json.Marshal(sessions) // strings and times always encode
	p.mu.Lock()
	defer p.mu.Unlock()
	stateChanged = p.state != "" && p.state != st
	p.state, p.allocs, p.bps, p.uris = st, s.Allocations, s.BPS, string(uris)
	if !bytes.Equal(enc, p.sessions) {
		p.sessions = enc
		p.gen++
	}
	return stateChanged
}

func (p *published) snapshot() pubSnapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == "" { // nothing published yet: say so, with no sessions
		p.state, p.uris, p.sessions, p.missing = StateServing, "[]", []byte("[]"), true
	}
	s := pubSnapshot{state: p.state, uris: p.uris, allocations: p.allocs, bps: p.bps, gen: p.gen}
	if p.missing || p.wrote != p.gen {
		s.sessions = p.sessions
	}
	return s
}

func (p *published) written(gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wrote, p.missing = gen, false
}

func (p *published) unwritten() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.missing = true
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// liveNames returns the live nodes and their lease ends, by Redis's clock.
func (c *Client) liveNames(ctx context.Context) ([]redis.Z, error) {
	var now *redis.TimeCmd
	var zs *redis.ZSliceCmd
	_, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		now = p.Time(ctx)
		zs = p.ZRangeWithScores(ctx, c.keys.nodes(), 0, -1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	ms := float64(now.Val().UnixMilli())
	return slices.DeleteFunc(zs.Val(), func(z redis.Z) bool { return z.Score <= ms }), nil
}

// Nodes returns the live nodes with their state and load, by name.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	ctx, cancel := opContext(ctx, c.opTimeout())
	defer cancel()
	live, err := c.liveNames(ctx)
	if err != nil {
		return nil, c.fail(ctx, "list nodes", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(live))
	_, err = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, z := range live {
			cmds[i] = p.HGetAll(ctx, c.keys.node(z.Member.(string)))
		}
		return nil
	})
	if err != nil {
		return nil, c.fail(ctx, "list nodes", err)
	}
	nodes := make([]Node, 0, len(live))
	for i, z := range live {
		h := cmds[i].Val()
		if len(h) == 0 {
			continue // its hash expired a moment before its lease
		}
		n := Node{Name: z.Member.(string), State: h["state"], Expires: time.UnixMilli(int64(z.Score))}
		n.Allocations, _ = strconv.Atoi(h["allocations"])
		n.BPS, _ = strconv.ParseUint(h["bps"], 10, 64)
		if ms, err := strconv.ParseInt(h["updated"], 10, 64); err == nil {
			n.Updated = time.UnixMilli(ms)
		}
		_ = json.Unmarshal([]byte(h["uris"]), &n.URIs) // a node that wrote none has none
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	return nodes, nil
}

// LeastLoaded returns at most n live, serving nodes other than exclude,
// fewest allocations first (ties: lower bps, then name): where a draining
// node redirects, and what a credentials answer names.
func (c *Client) LeastLoaded(ctx context.Context, n int, exclude string) ([]Node, error) {
	nodes, err := c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	nodes = slices.DeleteFunc(nodes, func(x Node) bool { return x.State != StateServing || x.Name == exclude })
	slices.SortFunc(nodes, func(a, b Node) int {
		return cmp.Or(cmp.Compare(a.Allocations, b.Allocations), cmp.Compare(a.BPS, b.BPS), cmp.Compare(a.Name, b.Name))
	})
	return nodes[:min(n, len(nodes))], nil
}

// Sessions returns every live node's published sessions, by node, then as
// each node listed them.
func (c *Client) Sessions(ctx context.Context) ([]Session, error) {
	ctx, cancel := opContext(ctx, c.opTimeout())
	defer cancel()
	live, err := c.liveNames(ctx)
	if err != nil {
		return nil, c.fail(ctx, "list sessions", err)
	}
	if len(live) == 0 {
		return nil, nil
	}
	slices.SortFunc(live, func(a, b redis.Z) int { return cmp.Compare(a.Member.(string), b.Member.(string)) })
	keys := make([]string, len(live))
	for i, z := range live {
		keys[i] = c.keys.sessions(z.Member.(string))
	}
	vals, err := c.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, c.fail(ctx, "list sessions", err)
	}
	var all []Session
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // no sessions published (or expired with the lease)
		}
		var list []Session
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			return nil, fmt.Errorf("list sessions: decode %s: %w", keys[i], err)
		}
		all = append(all, list...)
	}
	return all, nil
}
