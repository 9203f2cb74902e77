package loglimit

// MaxString bounds a client-chosen string (a username) in a log line: a
// 1.5 kB username must not make a log line of several kilobytes.
const MaxString = 64

// Clip returns s cut to MaxString bytes (on a character boundary) with a
// marker saying it was cut, or s itself if it fits.
func Clip(s string) string {
	if len(s) <= MaxString {
		return s
	}
	n := MaxString
	for n > 0 && !isCharStart(s[n]) {
		n--
	}
	return s[:n] + "…(truncated)"
}

// isCharStart reports whether b starts a UTF-8 sequence (is no continuation byte).
func isCharStart(b byte) bool { return b&0xC0 != 0x80 }
