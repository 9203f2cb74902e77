package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// pionLoggers routes pion's logs into turnd's slog logger. pion logs every
// failed request at debug level (malformed packets, stale nonces...): the
// level check comes before formatting so those cost nothing when debug is off.
type pionLoggers struct{ log *slog.Logger }

func (f pionLoggers) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{log: f.log.With("component", "pion/"+scope)}
}

type pionLogger struct{ log *slog.Logger }

func (l pionLogger) logf(level slog.Level, format string, args ...any) {
	if l.log.Enabled(context.Background(), level) {
		l.log.Log(context.Background(), level, fmt.Sprintf(format, args...))
	}
}

func (l pionLogger) Trace(msg string)                  { l.logf(slog.LevelDebug-4, "%s", msg) }
func (l pionLogger) Tracef(format string, args ...any) { l.logf(slog.LevelDebug-4, format, args...) }
func (l pionLogger) Debug(msg string)                  { l.logf(slog.LevelDebug, "%s", msg) }
func (l pionLogger) Debugf(format string, args ...any) { l.logf(slog.LevelDebug, format, args...) }
func (l pionLogger) Info(msg string)                   { l.logf(slog.LevelInfo, "%s", msg) }
func (l pionLogger) Infof(format string, args ...any)  { l.logf(slog.LevelInfo, format, args...) }
func (l pionLogger) Warn(msg string)                   { l.logf(slog.LevelWarn, "%s", msg) }
func (l pionLogger) Warnf(format string, args ...any)  { l.logf(slog.LevelWarn, format, args...) }
func (l pionLogger) Error(msg string)                  { l.logf(slog.LevelError, "%s", msg) }
func (l pionLogger) Errorf(format string, args ...any) { l.logf(slog.LevelError, format, args...) }
