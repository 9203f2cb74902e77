// Package imports lets a package's tests hold its package comment's promise
// about what it never imports, directly or through another turnd package.
package imports

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// Module is turnd's import path prefix; the packages under it are followed.
const Module = "github.com/turnd/turnd/"

// Forbid fails t for every import of forbidden (a path, or a prefix of
// paths) by the package in the test's directory, whose import path is
// path, and by every turnd package it reaches. Run it from a package two
// levels below the module root (internal/x, pkg/x).
func Forbid(t testing.TB, path string, forbidden ...string) {
	t.Helper()
	seen := map[string]bool{}
	var walk func(dir, path string)
	walk = func(dir, path string) {
		t.Helper()
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
			if rel, ok := strings.CutPrefix(imp, Module); ok && !seen[imp] {
				seen[imp] = true
				walk(filepath.Join("..", "..", filepath.FromSlash(rel)), imp)
			}
		}
	}
	walk(".", path)
}
