package turn

import (
	"encoding/binary"
	"time"

	"github.com/pion/stun/v4"
)

// requestedLifetime reads LIFETIME (RFC 8656 §18.2); false when the request
// has none or a malformed one, which counts as none: the default is
// granted rather than the request refused over an optional attribute.
func requestedLifetime(m *stun.Message) (time.Duration, bool) {
	v, err := m.Get(stun.AttrLifetime)
	if err != nil || len(v) != 4 {
		return 0, false
	}
	return time.Duration(binary.BigEndian.Uint32(v)) * time.Second, true
}

// grant is the lifetime given for a request asking for asked (none: 0).
// RFC 8656 §7.2: "If the client's requested lifetime is less than the
// default, then the server uses the default lifetime. If it is more than
// the maximum, then the server uses the maximum"; otherwise as asked, so
// exactly the maximum is granted exactly. §8.2: a Refresh asking for 0
// deletes, so there 0 stays 0. A zero bound is not applied.
func grant(asked time.Duration, refresh bool, p *Policy) time.Duration {
	if refresh && asked == 0 {
		return 0
	}
	if p.MaxLifetime > 0 && asked > p.MaxLifetime {
		asked = p.MaxLifetime
	}
	if p.DefaultLifetime > 0 && asked < p.DefaultLifetime {
		asked = p.DefaultLifetime
	}
	return asked
}

// lifetimeAttr is a LIFETIME attribute of d, in whole seconds.
func lifetimeAttr(d time.Duration) stun.Setter {
	v := make([]byte, 4)
	binary.BigEndian.PutUint32(v, uint32(d/time.Second)) //nolint:gosec // at most the policy's maximum
	return stun.RawAttribute{Type: stun.AttrLifetime, Value: v}
}
