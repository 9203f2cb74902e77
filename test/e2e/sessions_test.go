package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestSessionsAndDisconnect: a live allocation shows in /sessions and in
// `turnd sessions`; disconnect without the token is 401 and ends nothing;
// with it, the allocation ends and the client's next Refresh gets 437, and
// turnd logs who asked and the usage record. The token never reaches the log.
func TestSessionsAndDisconnect(t *testing.T) {
	const token = "e2e-admin-token-value"
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.HTTP.AdminTokenFile = tokenFile
	srv := start(t, cfg)
	c := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	relayAddr := c.MustAllocate()

	if code, _ := srv.get("/sessions"); code != http.StatusUnauthorized {
		t.Fatalf("/sessions without the token: %d, want 401", code)
	}
	if code, _ := srv.get("/status"); code != http.StatusOK {
		t.Fatalf("/status: %d, want 200 without a token", code)
	}
	code, out := runTurnd(t, "sessions", "--http", srv.HTTP, "--token-file", tokenFile)
	if code != 0 || !strings.Contains(out, relayAddr.String()) || !strings.Contains(out, "demo") {
		t.Fatalf("turnd sessions: exit %d:\n%s", code, out)
	}

	resp, err := http.Post("http://"+srv.HTTP+"/sessions/disconnect?user=demo", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("disconnect without the token: %d, want 401", resp.StatusCode)
	}
	if code := c.Refresh(5 * time.Minute); code != 0 { // still live
		t.Fatalf("Refresh after the refused disconnect: error %d", code)
	}

	code, out = runTurnd(t, "disconnect", "--http", srv.HTTP, "--token-file", tokenFile, "--id", relayAddr.String())
	if code != 0 || !strings.Contains(out, "disconnected 1 allocation") {
		t.Fatalf("turnd disconnect: exit %d:\n%s", code, out)
	}
	if code := c.Refresh(0); code != 437 {
		t.Fatalf("Refresh after the disconnect: %d, want 437", code)
	}
	asked := srv.waitLog("disconnect requested", 5*time.Second)
	if by, _ := asked["by"].(string); !strings.Contains(by, "operator ") {
		t.Errorf("the log does not say who asked: %v", asked)
	}
	rec := srv.waitLog("allocation deleted", 5*time.Second)
	if rec["reason"] != "disconnected" || rec["relay"] != relayAddr.String() {
		t.Errorf("usage record %v", rec)
	}
	if strings.Contains(srv.logText(), token) {
		t.Error("the admin token appears in turnd's log")
	}
}
