package fleet

import "errors"

var (
	// ErrUserQuota means the user already holds its fleet-wide allocation
	// limit across the live nodes.
	ErrUserQuota = errors.New("fleet user allocation quota reached")
	// ErrTotalQuota means the live nodes already hold the fleet-wide total.
	ErrTotalQuota = errors.New("fleet total allocation quota reached")
	// ErrUnavailable means Redis is down, slow, or the node's counts are
	// being rebuilt: the caller applies its fallback rule.
	ErrUnavailable = errors.New("fleet unavailable")
	// ErrClosed means a call on a Client after Close.
	ErrClosed = errors.New("fleet client closed")
	// ErrOptions means Options that Open cannot use.
	ErrOptions = errors.New("invalid fleet options")
)
