package offload

import "fmt"

// Count is what the kernel relayed for one slot since NewSlot; bytes are
// payload bytes, without the ChannelData header.
type Count struct{ ToPeerPackets, ToPeerBytes, ToClientPackets, ToClientBytes uint64 }

// slotQueue hands out counter slots: never-used ones first, then freed ones
// oldest first, so a slot is reused as late as possible and a datagram still
// in flight for its last owner is unlikely to bill the next.
type slotQueue struct {
	next  uint32   // slots below next have been handed out once
	free  []uint32 // freed slots, oldest first
	inUse map[uint32]bool
}

// NewSlot returns a counter slot whose counters read zero.
func (p *Path) NewSlot() (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	q := &p.slots
	if q.inUse == nil {
		q.inUse = map[uint32]bool{}
	}
	var s uint32
	switch {
	case q.next < p.maxSlots:
		s = q.next
		q.next++
	case len(q.free) > 0:
		s = q.free[0]
		q.free = q.free[1:]
	default:
		return 0, ErrNoSlot
	}
	if err := p.objs.Slots.Put(s, make([]relayCounters, p.ncpu)); err != nil {
		q.free = append(q.free, s)
		return 0, fmt.Errorf("zero counter slot %d: %w", s, err)
	}
	q.inUse[s] = true
	return s, nil
}

// FreeSlot gives s back; it is reused after every other free slot. Freeing
// a slot that is not in use does nothing.
func (p *Path) FreeSlot(s uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !p.slots.inUse[s] {
		return
	}
	delete(p.slots.inUse, s)
	p.slots.free = append(p.slots.free, s)
}

// Count returns what the kernel relayed for slot s since NewSlot, summed
// over CPUs.
func (p *Path) Count(s uint32) (Count, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return Count{}, ErrClosed
	}
	per := make([]relayCounters, p.ncpu)
	if err := p.objs.Slots.Lookup(s, per); err != nil {
		return Count{}, fmt.Errorf("read counter slot %d: %w", s, err)
	}
	var c Count
	for _, v := range per {
		c.ToPeerPackets += v.ToPeerPackets
		c.ToPeerBytes += v.ToPeerBytes
		c.ToClientPackets += v.ToClientPackets
		c.ToClientBytes += v.ToClientBytes
	}
	return c, nil
}
