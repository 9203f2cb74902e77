package allocation

import "errors"

var (
	// ErrTotalQuota means the server already holds limits.total_allocations allocations.
	ErrTotalQuota = errors.New("total allocation quota reached")
	// ErrUserQuota means the user already holds limits.user_allocations allocations.
	ErrUserQuota = errors.New("user allocation quota reached")
	// ErrIPQuota means the client's IP address already holds limits.ip_allocations allocations.
	ErrIPQuota = errors.New("per-address allocation quota reached")
	// ErrPrefixQuota means the client's network (an IPv4 /24, an IPv6 /48)
	// already holds limits.prefix_allocations allocations.
	ErrPrefixQuota = errors.New("per-prefix allocation quota reached")
)
