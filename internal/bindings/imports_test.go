package bindings

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsStayALeaf: bindings names what the planes share and nothing
// else, so neither plane reaches the other through it.
func TestImportsStayALeaf(t *testing.T) {
	imports.Forbid(t, imports.Module+"internal/bindings",
		"github.com/pion", "github.com/prometheus", "net/http", "syscall", "golang.org/x/sys",
		imports.Module+"internal/relay", imports.Module+"internal/edge", imports.Module+"internal/mmsg",
		imports.Module+"internal/auth", imports.Module+"pkg")
}
