package coturnconf

import "time"

// limits converts quotas and lifetimes. coturn's lifetimes are seconds; an
// empty value means coturn's default, which is also turnd's.
func (c *converter) limits() {
	for _, q := range []struct {
		name, path string
		dst        *int
	}{
		{"user-quota", "limits.user_allocations", &c.cfg.Limits.UserAllocations},
		{"total-quota", "limits.total_allocations", &c.cfg.Limits.TotalAllocations},
	} {
		o, ok := c.last(q.name)
		if !ok {
			// coturn's quotas default to unlimited; turnd's user quota
			// does not (a leaked credential must not hold the relay range).
			if *q.dst != 0 {
				c.why[q.path] = "turnd's default; coturn's " + q.name + " is unlimited by default"
			}
			continue
		}
		if n, ok := c.integer(o, isCount); ok {
			*q.dst, c.why[q.path] = n, src(o)+"; 486 when reached"
		} else {
			c.warn(o, "a negative quota means nothing; keeping turnd's default %d (0: unlimited)", *q.dst)
		}
	}
	// coturn's "bps" options count bytes per second; turnd's count bits.
	for _, b := range []struct {
		name, path, how string
		dst             *int64
	}{
		{"max-bps", "limits.max_bps", "per allocation, each way", &c.cfg.Limits.MaxBPS},
		{"bps-capacity", "limits.total_bps", "relayed, measured (coturn reserved it per session)", &c.cfg.Limits.TotalBPS},
	} {
		if o, ok := c.last(b.name); ok {
			if n, ok := c.integer(o, isCount); ok {
				*b.dst, c.why[b.path] = int64(n)*8, src(o)+" in bytes/s, here × 8 in bits/s, "+b.how
			} else {
				c.warn(o, "a negative rate means nothing; keeping 0 (unlimited)")
			}
		}
	}
	for _, l := range []struct {
		name, path string
		dst        *time.Duration
	}{
		{"max-allocate-lifetime", "limits.max_lifetime", &c.cfg.Limits.MaxLifetime},
		{"permission-lifetime", "limits.permission_lifetime", &c.cfg.Limits.PermissionLifetime},
		{"channel-lifetime", "limits.channel_lifetime", &c.cfg.Limits.ChannelLifetime},
	} {
		o, ok := c.last(l.name)
		if !ok || o.Value == "" {
			continue
		}
		if n, ok := c.integer(o, isPositive); ok {
			*l.dst, c.why[l.path] = time.Duration(n)*time.Second, src(o)
		} else {
			c.warn(o, "must be a positive number of seconds; keeping %s", fmtDuration(*l.dst))
		}
	}
}
