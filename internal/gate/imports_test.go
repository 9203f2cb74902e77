package gate

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsHoldNoSockets: the package comment's promise, checked through
// every turnd package the gate reaches: policy only, so no client I/O, no
// relay, no pion/turn, and no socket machinery (net stays for net.Addr).
func TestImportsHoldNoSockets(t *testing.T) {
	imports.Forbid(t, imports.Module+"internal/gate",
		"github.com/pion/turn", "github.com/prometheus", "net/http", "syscall", "golang.org/x/sys", "crypto/tls",
		imports.Module+"internal/edge", imports.Module+"internal/relay", imports.Module+"internal/mmsg", imports.Module+"pkg/server")
}
