package drain_test

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsStayPure: the drain is a state machine on an injected clock; it
// knows no sockets, HTTP, Prometheus, pion or other turnd package.
func TestImportsStayPure(t *testing.T) {
	imports.Forbid(t, imports.Module+"pkg/drain", "net", "syscall", "golang.org/x/sys",
		"github.com/prometheus", "github.com/pion", "github.com/turnd/turnd") // any turnd package
}
