package relay

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"

	"github.com/turnd/turnd/internal/mmsg"
)

// family picks bind and advertised addresses for a network name
// ("udp4", "tcp6", ...).
func (rl *Relay) family(network string) (bind, external net.IP, v6 bool, err error) {
	v6 = network[len(network)-1] == '6'
	bind, external = rl.opts.IPv4, rl.opts.External4
	if v6 {
		bind, external = rl.opts.IPv6, rl.opts.External6
	}
	if bind == nil {
		return nil, nil, v6, fmt.Errorf("allocate relay on %s: %w", network, ErrNoAddressForFamily)
	}
	if external == nil {
		external = bind
	}
	return bind, external, v6, nil
}

// eachPort calls try on the requested port, or on every port of the range
// from a random start until try succeeds: a full range is reported as
// ErrNoFreePort (answered 508), never as a hang. even leaves out
// odd ports (EVEN-PORT).
//
// Even ports whose odd neighbour is free are tried first. A client asking
// for EVEN-PORT with a reservation (RTP/RTCP pairs, as coturn's uclient
// does) later needs P+1, and a client asking without one may never get
// it. Keeping turnd's own allocations off odd ports, and off even ports
// whose partner is taken (its pair's first half came and went), leaves P+1
// free whichever listener the pair arrives on.
func (rl *Relay) eachPort(requested int, v6, even bool, try func(port int) error) error {
	if requested != 0 {
		if rl.tcpHolds(v6, requested) {
			return ErrNoFreePort
		}
		return try(requested)
	}
	span := rl.opts.MaxPort - rl.opts.MinPort + 1
	start := rand.IntN(span)
	for pass := 0; pass < 3; pass++ {
		for i := 0; i < span; i++ {
			p := rl.opts.MinPort + (start+i)%span
			switch {
			case pass == 0 && (p%2 != 0 || rl.inUse(v6, p+1)),
				pass == 1 && (p%2 != 0 || !rl.inUse(v6, p+1)),
				pass == 2 && (p%2 == 0 || even),
				rl.tcpHolds(v6, p): // a UDP bind would not notice an RFC 6062 relay there
				continue
			}
			if try(p) == nil {
				return nil
			}
		}
	}
	return ErrNoFreePort
}

// inUse reports whether turnd holds port as a relay (live or reserved).
func (rl *Relay) inUse(v6 bool, port int) bool {
	k := liveKey{v6: v6, port: port}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.live[k] != nil || rl.held[k] != nil || rl.tcp[k] != nil
}

// listenRelay binds a relay socket on bind:port, outside the runtime's
// poller (see mmsg.Socket): a downlink loop reads it.
func listenRelay(network string, bind net.IP, port int) (*mmsg.Socket, error) {
	return mmsg.ListenUDP(network, net.JoinHostPort(bind.String(), strconv.Itoa(port)), nil)
}
