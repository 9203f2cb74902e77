package edge

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsStayBelowServer: the package comment's promise, checked
// through every turnd package the edge reaches: it meets the relay and the
// handlers only through what pkg/server wires in, and binds what server
// translates from the configuration.
func TestImportsStayBelowServer(t *testing.T) {
	imports.Forbid(t, imports.Module+"internal/edge",
		"github.com/pion/turn", "github.com/prometheus", "net/http",
		imports.Module+"internal/relay", imports.Module+"pkg/server", imports.Module+"pkg/config",
		imports.Module+"pkg/turn")
}
