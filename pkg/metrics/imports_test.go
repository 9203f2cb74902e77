package metrics

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsStayAboveTheRelay: it reads the registry, the drain and the
// traffic totals, never the packages that hold sockets or pion.
func TestImportsStayAboveTheRelay(t *testing.T) {
	imports.Forbid(t, "github.com/turnd/turnd/pkg/metrics", "github.com/pion", "syscall", "golang.org/x/sys",
		"github.com/turnd/turnd/internal/edge", "github.com/turnd/turnd/internal/gate", "github.com/turnd/turnd/internal/relay", "github.com/turnd/turnd/internal/mmsg", "github.com/turnd/turnd/pkg/server")
}
