package main

import (
	"io"
	"log/slog"
	"strings"
)

// newLogger builds the process logger; the level can change on reload.
func newLogger(w io.Writer, format, level string) (*slog.Logger, *slog.LevelVar) {
	lv := new(slog.LevelVar)
	lv.Set(parseLevel(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), lv
	}
	return slog.New(slog.NewTextHandler(w, opts)), lv
}

// parseLevel maps a validated config level to slog's.
func parseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}
