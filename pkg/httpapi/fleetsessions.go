package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/turnd/turnd/pkg/allocation"
)

// fleetPage is one page of every node's allocations of user (all if ""),
// oldest first. Other nodes' come as they last published them, without
// traffic; this node's carry their traffic so far, as in the local scope.
func (a *API) fleetPage(ctx context.Context, user string, offset, limit int) (SessionPage, error) {
	listed, err := a.opts.Fleet.Sessions(ctx)
	if err != nil {
		return SessionPage{}, fmt.Errorf("list fleet sessions: %w", err)
	}
	all := make([]FleetSession, 0, len(listed))
	for _, s := range listed {
		if user == "" || s.User == user {
			all = append(all, s)
		}
	}
	slices.SortStableFunc(all, func(x, y FleetSession) int {
		return cmp.Or(x.StartedAt.Compare(y.StartedAt), cmp.Compare(x.Node, y.Node), cmp.Compare(x.ID, y.ID))
	})
	lo, hi, next := pageBounds(len(all), offset, limit)
	page := SessionPage{Total: len(all), Offset: offset, Sessions: []Session{}, NextOffset: next}
	self, local := a.localByID(user, all[lo:hi])
	now := time.Now()
	for _, fs := range all[lo:hi] {
		if info, ok := local[fs.ID]; ok && fs.Node == self {
			s := sessionOf(info, a.opts.Admin.Usage(info), now)
			s.Node = fs.Node
			page.Sessions = append(page.Sessions, s)
			continue
		}
		page.Sessions = append(page.Sessions, Session{
			Node: fs.Node, ID: fs.ID, User: fs.User, Client: fs.Client, Transport: fs.Transport, Relay: fs.Relay,
			StartedAt: fs.StartedAt.UTC(), DurationSeconds: now.Sub(fs.StartedAt).Seconds(),
		})
	}
	return page, nil
}

// localByID returns this node's name and its live allocations of user by
// ID, when the page holds any of this node's; nil when the node's name is
// unknown (no fleet status) or none are on the page.
func (a *API) localByID(user string, page []FleetSession) (string, map[string]allocation.Info) {
	if a.opts.Fleet.Status == nil || a.opts.Admin.Sessions == nil || a.opts.Admin.Usage == nil {
		return "", nil
	}
	st := a.opts.Fleet.Status()
	if st == nil || !slices.ContainsFunc(page, func(s FleetSession) bool { return s.Node == st.Node }) {
		return "", nil
	}
	local := map[string]allocation.Info{}
	for _, info := range a.opts.Admin.Sessions(user) {
		local[addrText(info.Relay)] = info
	}
	return st.Node, local
}
