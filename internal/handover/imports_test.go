package handover

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsKnowNoTurn: the hand-over carries descriptors and bytes; what
// they mean is its callers' (the server's state, the TURN sockets).
func TestImportsKnowNoTurn(t *testing.T) {
	imports.Forbid(t, imports.Module+"internal/handover", "github.com/pion", "net/http", "github.com/prometheus",
		"github.com/turnd/turnd") // any turnd package
}
