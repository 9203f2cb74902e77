package gate

import (
	"encoding/binary"
	"time"

	"github.com/pion/stun/v4"
)

// lifetimes are the bounds a requested LIFETIME is held to (RFC 8656 §7.2
// for Allocate, §8.2 for Refresh): min(requested, max), raised to the
// default when that is shorter. A zero bound is not applied.
type lifetimes struct{ def, max time.Duration }

func lifetimesOf(p *Policy) lifetimes { return lifetimes{def: p.DefaultLifetime, max: p.MaxLifetime} }

// grant returns the lifetime, in seconds, given for a request of asked
// seconds. A Refresh asking for 0 deletes the allocation (§8.2), so 0 stays.
func (l lifetimes) grant(asked uint32, refresh bool) uint32 {
	if refresh && asked == 0 {
		return 0
	}
	d := time.Duration(asked) * time.Second
	if l.max > 0 && d > l.max {
		d = l.max
	}
	if l.def > 0 && d < l.def {
		d = l.def
	}
	return uint32(d / time.Second)
}

// changes reports whether msg's LIFETIME must be rewritten before pion sees
// it: pion honours any value under an hour, 0 included (which fails an Allocate).
func (l lifetimes) changes(msg *stun.Message, refresh bool) bool {
	v, err := msg.Get(stun.AttrLifetime)
	if err != nil || len(v) != 4 {
		return false
	}
	asked := binary.BigEndian.Uint32(v)
	return l.grant(asked, refresh) != asked
}
