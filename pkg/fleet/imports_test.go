package fleet

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsKnowOnlyRedis: the fleet is one node's view of Redis; it knows
// no HTTP, Prometheus, pion, allocation table or other turnd machinery
// (pkg/drain only lends it the Clock type).
func TestImportsKnowOnlyRedis(t *testing.T) {
	imports.Forbid(t, imports.Module+"pkg/fleet", "net/http", "syscall", "golang.org/x/sys",
		"github.com/prometheus", "github.com/pion", imports.Module+"internal",
		imports.Module+"pkg/allocation", imports.Module+"pkg/server", imports.Module+"pkg/turn",
		imports.Module+"pkg/httpapi", imports.Module+"pkg/config", imports.Module+"pkg/metrics")
}
