package allocation

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsHoldNoSockets: the table and the registry keep books; they
// know no HTTP, Prometheus, pion or socket machinery (net stays for
// Info's net.Addr values), and nothing above them.
func TestImportsHoldNoSockets(t *testing.T) {
	imports.Forbid(t, imports.Module+"pkg/allocation", "net/http", "syscall", "golang.org/x/sys", "crypto/tls",
		"github.com/prometheus", "github.com/pion",
		imports.Module+"internal/edge", imports.Module+"internal/relay", imports.Module+"internal/mmsg", imports.Module+"pkg/server",
		imports.Module+"pkg/turn", imports.Module+"internal/auth")
}
