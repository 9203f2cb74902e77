package config

// PrefixCaps returns limits.prefix_allocations and connections_per_prefix as
// they apply. A network holds at least one host, so a prefix cap below its
// per-host cap is raised to it: an operator who raised ip_allocations for one
// large NAT address keeps a config that loads, and that address its share.
func (l Limits) PrefixCaps() (allocations, connections int) {
	return atLeast(l.PrefixAllocations, l.IPAllocations), atLeast(l.ConnectionsPerPrefix, l.ConnectionsPerIP)
}

// atLeast is prefix raised to perIP; 0 (unlimited) stays 0.
func atLeast(prefix, perIP int) int {
	if prefix == 0 {
		return 0
	}
	return max(prefix, perIP)
}

// AllocateRate returns limits.user_allocate_rate as it applies, with its
// burst. It guards the per-user quota, so it is off with the quota off (one
// static user shared by every client: a meeting's start must not meet it),
// and its burst is never below the quota, so a user can allocate its share
// at once.
func (l Limits) AllocateRate() (rate, burst int) {
	if l.UserAllocations == 0 || l.UserAllocateRate == 0 {
		return 0, 0
	}
	return l.UserAllocateRate, max(2*l.UserAllocateRate, l.UserAllocations)
}
