package wire

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsAreBytesOnly: wire reads and writes bytes; it holds no socket
// and needs no other turnd package or STUN library (netip values only).
func TestImportsAreBytesOnly(t *testing.T) {
	imports.Forbid(t, imports.Module+"internal/wire", "syscall", "golang.org/x/sys", "github.com/pion", "github.com/turnd/turnd") // any turnd package
}
