package server

import (
	"sync"
	"time"
)

// maxLoggedString bounds a client-chosen string (a username) in a log line:
// a 1.5 kB username must not make a log line of several kilobytes.
const maxLoggedString = 64

// clip returns s cut to maxLoggedString bytes (on a character boundary)
// with a marker saying it was cut, or s itself if it fits.
func clip(s string) string {
	if len(s) <= maxLoggedString {
		return s
	}
	n := maxLoggedString
	for n > 0 && !isCharStart(s[n]) {
		n--
	}
	return s[:n] + "…(truncated)"
}

// isCharStart reports whether b starts a UTF-8 sequence (is no continuation byte).
func isCharStart(b byte) bool { return b&0xC0 != 0x80 }

// logLimit lets at most perSecond lines of one kind through in each second,
// so that a client repeating a bad request at line rate cannot flood the
// log; the metrics still count every one. The next line let through says
// how many were held back.
type logLimit struct {
	perSecond int
	now       func() time.Time

	mu         sync.Mutex
	window     time.Time // start of the current second
	used       int       // lines let through in it
	suppressed int       // lines held back since the last one let through
}

func newLogLimit(perSecond int, now func() time.Time) *logLimit {
	if now == nil {
		now = time.Now
	}
	return &logLimit{perSecond: perSecond, now: now}
}

// allow reports whether a line may be written now and, if so, how many
// lines were held back before it.
func (l *logLimit) allow() (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.window) >= time.Second {
		l.window, l.used = now, 0
	}
	if l.used >= l.perSecond {
		l.suppressed++
		return false, 0
	}
	l.used++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}
