package relay

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportsStayBelowServer: the package comment's promise, checked
// through every turnd package relay reaches, so that pion stays in
// pkg/server and the relay stays free of policy, client I/O and metrics.
func TestImportsStayBelowServer(t *testing.T) {
	const module = "github.com/turnd/turnd/"
	forbidden := []string{
		"github.com/pion/turn", "github.com/prometheus", "net/http",
		module + "internal/gate", module + "internal/edge", module + "pkg/server",
	}
	seen := map[string]bool{}
	var walk func(dir, path string)
	walk = func(dir, path string) {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("read package %s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			for _, f := range forbidden {
				if imp == f || strings.HasPrefix(imp, f+"/") {
					t.Errorf("%s imports %s", path, imp)
				}
			}
			if rel, ok := strings.CutPrefix(imp, module); ok && !seen[imp] {
				seen[imp] = true
				walk(filepath.Join("..", "..", filepath.FromSlash(rel)), imp)
			}
		}
	}
	walk(".", module+"internal/relay")
}
