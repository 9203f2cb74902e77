package relay

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsStayBelowServer: the package comment's promise, checked
// through every turnd package relay reaches, so that the relay stays free
// of pion's server, the handlers, policy, client I/O and metrics.
func TestImportsStayBelowServer(t *testing.T) {
	imports.Forbid(t, imports.Module+"internal/relay",
		"github.com/pion/turn", "github.com/prometheus", "net/http",
		imports.Module+"pkg/turn", imports.Module+"internal/edge", imports.Module+"pkg/server")
}
