package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsNoTestHelpers: the binary reaches every turnd package it runs;
// none of them may stand on a package written for tests.
func TestImportsNoTestHelpers(t *testing.T) {
	imports.Forbid(t, imports.Module+"cmd/turnd", "testing",
		imports.Module+"internal/imports", imports.Module+"internal/stuntest", imports.Module+"internal/testturn",
		imports.Module+"internal/testcert", imports.Module+"internal/testproxy", imports.Module+"internal/stacks", imports.Module+"internal/redistest",
		imports.Module+"pkg/drain/draintest")
}

// TestBinaryHasNoPionServer: turnd serves through its own control plane;
// pion/turn (its server, and so its client too) is in no package the
// binary is built from, its own or a dependency's. pion's client stays in
// the tests, as one of the clients turnd is held against.
func TestBinaryHasNoPionServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/pion/turn" || strings.HasPrefix(p, "github.com/pion/turn/") {
			t.Errorf("the binary is built from %s", p)
		}
	}
}
