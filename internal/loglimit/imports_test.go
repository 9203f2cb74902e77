package loglimit

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsStayALeaf: the limiter is a leaf every package may use; it
// writes no line itself and holds no socket.
func TestImportsStayALeaf(t *testing.T) {
	imports.Forbid(t, imports.Module+"internal/loglimit", "log/slog", "net", "syscall", "github.com/pion",
		"github.com/prometheus", "github.com/turnd/turnd")
}
