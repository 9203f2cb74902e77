package main

import (
	"testing"

	"github.com/turnd/turnd/internal/imports"
)

// TestImportsNoTestHelpers: the binary reaches every turnd package it runs;
// none of them may stand on a package written for tests.
func TestImportsNoTestHelpers(t *testing.T) {
	imports.Forbid(t, imports.Module+"cmd/turnd", "testing",
		imports.Module+"internal/imports", imports.Module+"internal/stuntest", imports.Module+"internal/testturn",
		imports.Module+"internal/testcert", imports.Module+"internal/testproxy", imports.Module+"internal/stacks",
		imports.Module+"pkg/drain/draintest")
}
