package turn_test

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsHoldNoSockets: the package comment's promise, checked through
// every turnd package the handlers reach: the control protocol decides and
// answers through bindings.Client and Relays, so no client I/O, no relay,
// no socket machinery, no TLS, no metrics or HTTP, and no pion/turn.
func TestImportsHoldNoSockets(t *testing.T) {
	imports.Forbid(t, imports.Module+"pkg/turn",
		"github.com/pion/turn", "github.com/prometheus", "net/http", "syscall", "golang.org/x/sys", "crypto/tls",
		imports.Module+"internal/edge", imports.Module+"internal/relay", imports.Module+"internal/mmsg",
		imports.Module+"pkg/server")
}
