package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"

	"github.com/turnd/turnd/internal/loglimit"
)

// pionLoggers routes pion's logs into turnd's slog logger. pion logs every
// failed request at debug level (malformed packets, stale nonces...): the
// level check comes before formatting so those cost nothing when debug is off.
type pionLoggers struct {
	log *slog.Logger
	// kinds limits pion's lines, a kind per format string: nearly every one
	// answers a client's request or a peer's connection (a denied peer, a
	// peer without permission on an RFC 6062 relay port).
	kinds *loglimit.Kinds
}

func (f pionLoggers) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{log: f.log.With("component", "pion/"+scope), kinds: f.kinds}
}

type pionLogger struct {
	log   *slog.Logger
	kinds *loglimit.Kinds
}

// logf writes a line whose format string is its kind; a line held back
// is not formatted.
func (l pionLogger) logf(level slog.Level, format string, args ...any) {
	if l.log.Enabled(context.Background(), level) {
		if held, ok := l.kinds.Of(format).Allow(); ok {
			l.write(level, fmt.Sprintf(format, args...), held)
		}
	}
}

// line writes a line whose text is its kind.
func (l pionLogger) line(level slog.Level, msg string) {
	if l.log.Enabled(context.Background(), level) {
		if held, ok := l.kinds.Of(msg).Allow(); ok {
			l.write(level, msg, held)
		}
	}
}

func (l pionLogger) write(level slog.Level, msg string, held int64) {
	if held > 0 {
		l.log.Log(context.Background(), level, msg, "suppressed", held)
		return
	}
	l.log.Log(context.Background(), level, msg)
}

func (l pionLogger) Trace(msg string)                  { l.line(slog.LevelDebug-4, msg) }
func (l pionLogger) Tracef(format string, args ...any) { l.logf(slog.LevelDebug-4, format, args...) }
func (l pionLogger) Debug(msg string)                  { l.line(slog.LevelDebug, msg) }
func (l pionLogger) Debugf(format string, args ...any) { l.logf(slog.LevelDebug, format, args...) }
func (l pionLogger) Info(msg string)                   { l.line(slog.LevelInfo, msg) }
func (l pionLogger) Infof(format string, args ...any)  { l.logf(slog.LevelInfo, format, args...) }
func (l pionLogger) Warn(msg string)                   { l.line(slog.LevelWarn, msg) }
func (l pionLogger) Warnf(format string, args ...any)  { l.logf(slog.LevelWarn, format, args...) }
func (l pionLogger) Error(msg string)                  { l.line(slog.LevelError, msg) }
func (l pionLogger) Errorf(format string, args ...any) { l.logf(slog.LevelError, format, args...) }
