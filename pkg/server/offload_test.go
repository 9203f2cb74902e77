package server

import (
	"strings"
	"testing"

	"github.com/turnd/turnd/pkg/config"
)

// TestOffloadGapsNameWildcards: a wildcard UDP listener or relay address
// keeps its traffic in user space, and the kernel path says which.
func TestOffloadGapsNameWildcards(t *testing.T) {
	cfg := config.Default()
	cfg.Listen.UDP = []string{"192.0.2.1:3478", "0.0.0.0:3479"}
	cfg.Relay.Address = "0.0.0.0"
	cfg.Relay.ExternalAddress = "192.0.2.1"
	gaps := offloadGaps(cfg)
	if len(gaps) != 2 || !strings.Contains(gaps[0], "0.0.0.0:3479") || !strings.Contains(gaps[1], "relay.address 0.0.0.0") {
		t.Fatalf("gaps %q; want the wildcard listener and the wildcard relay address", gaps)
	}
	if gaps := offloadGaps(config.Default()); len(gaps) != 0 {
		t.Fatalf("gaps of the embedded default %q; want none", gaps)
	}
}
