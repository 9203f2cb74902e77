package relay

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsStayBelowServer: the package comment's promise, checked
// through every turnd package relay reaches, so that pion stays in
// pkg/server and the relay stays free of policy, client I/O and metrics.
func TestImportsStayBelowServer(t *testing.T) {
	const module = "github.com/turnd/turnd/"
	imports.Forbid(t, module+"internal/relay",
		"github.com/pion/turn", "github.com/prometheus", "net/http",
		module+"internal/gate", module+"internal/edge", module+"pkg/server")
}
