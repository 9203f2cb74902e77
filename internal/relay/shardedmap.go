package relay

import (
	"encoding/binary"
	"net/netip"
	"sync"

	"github.com/turnd/turnd/internal/bindings"
)

// mapShards spreads a shardedMap over locks so lanes on different CPUs
// rarely meet; each lookup takes one read lock.
const mapShards = 64

// shardKey is a key a shardedMap can place: hash picks its shard.
type shardKey interface {
	comparable
	hash() uint32
}

// owned is a value that belongs to one route, so that a late delete by an
// allocation that lost the key (the client allocated again) leaves it alone.
type owned interface {
	owner() *bindings.Route
}

// shardedMap is the fast path's lookup table of the clients' allocations.
type shardedMap[K shardKey, V owned] struct {
	shards [mapShards]mapShard[K, V]
}

type mapShard[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
	_  [32]byte // keep neighbouring shards' locks off one cache line
}

func (t *shardedMap[K, V]) shard(k K) *mapShard[K, V] {
	return &t.shards[k.hash()%mapShards]
}

// get is on the hot path: one read lock, no allocation.
func (t *shardedMap[K, V]) get(k K) (V, bool) {
	s := t.shard(k)
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	return v, ok
}

func (t *shardedMap[K, V]) set(k K, v V) {
	s := t.shard(k)
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[K]V)
	}
	s.m[k] = v
	s.mu.Unlock()
}

// del removes k if its value still belongs to r.
func (t *shardedMap[K, V]) del(k K, r *bindings.Route) {
	s := t.shard(k)
	s.mu.Lock()
	if v, ok := s.m[k]; ok && v.owner() == r {
		delete(s.m, k)
	}
	s.mu.Unlock()
}

// addrPortHash mixes a client's port and IPv4 address; IPv6 clients share
// shards by port alone.
func addrPortHash(a netip.AddrPort) uint32 {
	h := uint32(a.Port()) * 2654435761
	if ip := a.Addr(); ip.Is4() {
		b := ip.As4()
		h ^= binary.BigEndian.Uint32(b[:])
	}
	return h
}
