package edge

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsStayBelowServer: the package comment's promise, checked
// through every turnd package the edge reaches: it asks the gate, and
// meets the relay and pion only through what pkg/server wires in.
func TestImportsStayBelowServer(t *testing.T) {
	const module = "github.com/turnd/turnd/"
	imports.Forbid(t, module+"internal/edge",
		"github.com/pion/turn", "github.com/prometheus", "net/http",
		module+"internal/relay", module+"pkg/server")
}
