package allocation

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsHoldNoSockets: the registry keeps books; it knows no HTTP,
// Prometheus, pion or socket machinery (net stays for net.Addr values).
func TestImportsHoldNoSockets(t *testing.T) {
	imports.Forbid(t, imports.Module+"pkg/allocation", "net/http", "syscall", "golang.org/x/sys", "crypto/tls",
		"github.com/prometheus", "github.com/pion",
		imports.Module+"internal/edge", imports.Module+"internal/gate", imports.Module+"internal/relay", imports.Module+"internal/mmsg", imports.Module+"pkg/server")
}
