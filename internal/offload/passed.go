package offload

import (
	"fmt"
	"strings"
)

// passReasons names the program's pass reasons in the order of enum
// pass_reason in bpf/maps.h; the last is not a pass: a helper failed after
// the packet was changed, so it was dropped.
const passReasons = "not_ip vlan not_udp ip_options fragment ipv6_ext ttl gso " +
	"malformed no_entry too_large no_checksum mtu fib egress no_slot encapsulated not_host martian v4_mapped dropped_error"

// Passed returns how many datagrams the program handed to user space, by
// reason, summed over CPUs since Open; "dropped_error" counts the datagrams
// it dropped because the kernel refused a rewrite half-way. It is for
// diagnostics: every datagram on the attached interfaces that is not
// relayed is counted once.
func (p *Path) Passed() (map[string]uint64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ErrClosed
	}
	names := strings.Fields(passReasons)
	out := make(map[string]uint64, len(names))
	per := make([]uint64, p.ncpu)
	for i, name := range names {
		if err := p.objs.Passed.Lookup(uint32(i), per); err != nil {
			return nil, fmt.Errorf("read pass counter %s: %w", name, err)
		}
		var sum uint64
		for _, n := range per {
			sum += n
		}
		out[name] = sum
	}
	return out, nil
}
