package server

import (
	"net/netip"
	"sync/atomic"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/turn"
)

// Table is the allocation table a Server serves from: made before the
// server (cmd/turnd gives it to the drain, which counts and stops its
// admissions, and to the metrics), its hooks reach the handler of the
// server built on it.
type Table struct {
	*allocation.Table
	handler atomic.Pointer[turn.Handler]
}

// NewTable returns an empty table with the quotas and lifetimes cfg sets.
func NewTable(cfg config.Config) *Table {
	t := &Table{}
	// The hooks run outside the table's lock; no allocation exists before
	// the server sets its handler, so none is ever lost.
	t.Table = allocation.New(AllocationLimits(cfg), allocation.Hooks{
		Ended: func(a *allocation.Allocation, why allocation.EndReason) {
			if h := t.handler.Load(); h != nil {
				h.Ended(a, why)
			}
		},
		FamilyEnded: func(a *allocation.Allocation, f bindings.Families, at netip.AddrPort) {
			if h := t.handler.Load(); h != nil {
				h.FamilyEnded(a, f, at)
			}
		},
		Unreserved: func(r allocation.Reservation) {
			if h := t.handler.Load(); h != nil {
				h.Unreserved(r)
			}
		},
		ConnExpired: func(a *allocation.Allocation, id uint32) {
			if h := t.handler.Load(); h != nil {
				h.ConnExpired(a, id)
			}
		},
	})
	return t
}

// AllocationLimits are the allocation quotas cfg sets (limits.total_allocations,
// user_allocations, ip_allocations, prefix_allocations) and the permission
// and channel lifetimes, as the table applies them.
func AllocationLimits(cfg config.Config) allocation.Limits {
	perPrefix, _ := cfg.Limits.PrefixCaps()
	return allocation.Limits{
		Total: cfg.Limits.TotalAllocations, PerUser: cfg.Limits.UserAllocations, PerIP: cfg.Limits.IPAllocations,
		PerPrefix:          perPrefix,
		PermissionLifetime: cfg.Limits.PermissionLifetime, ChannelLifetime: cfg.Limits.ChannelLifetime,
	}
}
