package relay

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsStayBelowServer: the package comment's promise, checked
// through every turnd package relay reaches, so that pion stays in
// pkg/server and the relay stays free of policy, client I/O and metrics.
func TestImportsStayBelowServer(t *testing.T) {
	imports.Forbid(t, imports.Module+"internal/relay",
		"github.com/pion/turn", "github.com/prometheus", "net/http",
		imports.Module+"internal/gate", imports.Module+"internal/edge", imports.Module+"pkg/server")
}
