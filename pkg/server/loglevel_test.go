package server_test

import (
	"log/slog"
	"net"
	"testing"

	"github.com/turnd/turnd/internal/testturn"
)

// TestLinesOffSpendNoLimit: lines the log level turns off spend nothing of
// their kind's limit, so once a reload turns the level on, the first line
// is written (in the same second) and reports nothing suppressed.
func TestLinesOffSpendNoLimit(t *testing.T) {
	const events = 30 // more than a second's lines of one kind
	for _, tc := range []struct {
		name, line string
		off, on    slog.Level
		cause      func(t *testing.T, c *testturn.Client, i int)
	}{
		{"debug channel line", "channel bound", slog.LevelInfo, slog.LevelDebug,
			func(t *testing.T, c *testturn.Client, i int) {
				peer := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10000 + i}
				wantCode(t, c, c.ChannelBind(0x4000+uint16(i), peer), 0, "ChannelBind")
			}},
		{"info refusal line", "peer refused", slog.LevelWarn, slog.LevelInfo,
			func(t *testing.T, c *testturn.Client, _ int) {
				if code := c.Permit(&net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 9}); code != 403 {
					t.Fatalf("CreatePermission to a denied peer: %d, want 403", code)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log lineLog
			level := new(slog.LevelVar)
			level.Set(tc.off)
			opts := testOptions()
			opts.Logger = log.leveled(level)
			s := start(t, opts)
			frozenClock(s)
			c := dial(t, s, "udp")
			c.MustAllocate()
			for i := range events {
				tc.cause(t, c, i)
			}
			level.Set(tc.on)
			tc.cause(t, c, events)
			lines := log.wait(t, 1, tc.line, func() []logLine { return log.matching(tc.line) })
			if len(lines) != 1 || lines[0].attrs["suppressed"] != "" {
				t.Fatalf("after the level was turned on: %v, want one %q line and nothing suppressed", lines, tc.line)
			}
		})
	}
}
