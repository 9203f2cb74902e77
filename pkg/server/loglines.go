package server

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/loglimit"
)

// lineLimits holds one limiter per kind of line a client or a peer can
// cause (internal/loglimit): each kind passes loglimit.PerSecond lines a
// second whatever the other kinds do, and the metrics count every event.
// Lines the operator or the process causes are written unlimited.
type lineLimits struct {
	clock atomic.Pointer[func() time.Time] // a test's clock; nil: time.Now

	badCredentials *loglimit.Limiter // 401 to an Allocate
	restTooLong    *loglimit.Limiter // a REST credential past auth.max_rest_validity
	draining       *loglimit.Limiter // 486 to an Allocate while draining
	totalBPS       *loglimit.Limiter // 486 at limits.total_bps
	quota          *loglimit.Limiter // 486 at an allocation quota
	allocateRate   *loglimit.Limiter // 486 past limits.user_allocate_rate
	peerRefused    *loglimit.Limiter // 403 to a permission, channel or connect to a denied peer
	capacity       *loglimit.Limiter // 508 past a per-allocation cap
	channelBound   *loglimit.Limiter // a debug line per channel
	panics         *loglimit.Limiter // a recovered panic: one a second
	proxy          *loglimit.Kinds   // PROXY protocol refusals, a kind per reason
}

func newLineLimits() *lineLimits {
	l := &lineLimits{}
	kind := func() *loglimit.Limiter { return loglimit.New(loglimit.PerSecond, l.now) }
	l.badCredentials = kind()
	l.restTooLong = kind()
	l.draining, l.totalBPS, l.quota, l.allocateRate = kind(), kind(), kind(), kind()
	l.peerRefused, l.capacity, l.channelBound = kind(), kind(), kind()
	l.panics = loglimit.New(1, l.now)
	l.proxy = loglimit.NewKinds(loglimit.PerSecond, l.now)
	return l
}

func (l *lineLimits) now() time.Time {
	if f := l.clock.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}

// allow is l.Allow for a line of level: a line the logger drops spends
// nothing, so a reload that turns its level on does not report as
// suppressed the lines that were never to be written.
func (s *Server) allow(l *loglimit.Limiter, level slog.Level) (held int64, ok bool) {
	if !s.log.Enabled(context.Background(), level) {
		return 0, false
	}
	return l.Allow()
}
