package main

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/server"
)

// TestReloadLogsRealmNeedsRestart: a reload that changes the realm keeps the
// running one and says so in the log, as the README promises.
func TestReloadLogsRealmNeedsRestart(t *testing.T) {
	cfg := config.Default()
	cfg.Listen.UDP, cfg.Listen.TCP = []string{"127.0.0.1:0"}, nil
	cfg.HTTP.Address = ""
	cfg.Auth.Users = map[string]string{"demo": "demo"}
	srv, err := server.New(server.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	next := cfg
	next.Realm = "elsewhere.example"
	path := filepath.Join(t.TempDir(), "turnd.yaml")
	writeYAML(t, path, next)
	var out bytes.Buffer
	var level slog.LevelVar
	reload(path, srv, slog.New(slog.NewTextHandler(&out, nil)), &level)

	var line string
	for l := range strings.Lines(out.String()) {
		if strings.Contains(l, "need a restart") {
			line = l
		}
	}
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "paths=[realm]") {
		t.Errorf("log has no restart-needed warning for realm:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "msg=reloaded") {
		t.Errorf("the rest of the reload did not apply:\n%s", out.String())
	}
}
