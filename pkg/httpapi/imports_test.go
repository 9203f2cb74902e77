package httpapi

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsStayAboveTheRelay: it reads the registry, the drain and the
// traffic totals, never the packages that hold sockets or pion.
func TestImportsStayAboveTheRelay(t *testing.T) {
	imports.Forbid(t, imports.Module+"pkg/httpapi", "github.com/pion", "syscall", "golang.org/x/sys",
		imports.Module+"internal/edge", imports.Module+"internal/relay", imports.Module+"internal/mmsg", imports.Module+"pkg/server")
}
