package allocation

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsHoldNoSockets: the registry keeps books; it knows no HTTP,
// Prometheus, pion or socket machinery (net stays for net.Addr values).
func TestImportsHoldNoSockets(t *testing.T) {
	imports.Forbid(t, "github.com/turnd/turnd/pkg/allocation", "net/http", "syscall", "golang.org/x/sys", "crypto/tls",
		"github.com/prometheus", "github.com/pion",
		"github.com/turnd/turnd/internal/edge", "github.com/turnd/turnd/internal/gate", "github.com/turnd/turnd/internal/relay", "github.com/turnd/turnd/internal/mmsg", "github.com/turnd/turnd/pkg/server")
}
