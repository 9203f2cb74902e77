package gate

import "sync"

// maxPending bounds the hand-over tables below. An entry normally lives for
// the microseconds between the gate and pion's handling of the same packet,
// but a request pion then refuses (quota, stale nonce) leaves its entry
// behind; past the bound the table is emptied rather than allowed to grow.
const maxPending = 4096

// pending is a small bounded hand-over table from the gate to a later stage
// of the same request.
type pending[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

func (p *pending[K, V]) put(k K, v V) {
	p.mu.Lock()
	if p.m == nil || len(p.m) >= maxPending {
		p.m = make(map[K]V)
	}
	p.m[k] = v
	p.mu.Unlock()
}

func (p *pending[K, V]) take(k K) (V, bool) {
	p.mu.Lock()
	v, ok := p.m[k]
	if ok {
		delete(p.m, k)
	}
	p.mu.Unlock()
	return v, ok
}

func (p *pending[K, V]) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
