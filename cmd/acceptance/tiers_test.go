package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tiers stay true: a test in this package that starts sandboxes (it calls
// requireSandboxes or requireSubjectEnv) lives in an e2e_<theme>_*_test.go
// file behind the build tag e2e, so go test ./... and make test-short never
// start one and .ci/e2e.sh runs it with its theme.
func TestSandboxTestsAreTagged(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	tagged := 0
	for _, name := range files {
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		isE2E := strings.HasPrefix(string(src), "//go:build e2e\n")
		if isE2E {
			tagged++
			assert.Regexp(t, `^e2e_[a-z0-9]+_.+_test\.go$`, name, "an e2e file names its theme")
			continue
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !(strings.HasPrefix(fn.Name.Name, "Test") || strings.HasPrefix(fn.Name.Name, "Benchmark")) {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok && (id.Name == "requireSandboxes" || id.Name == "requireSubjectEnv") {
						t.Errorf("%s: %s starts sandboxes (%s): move it into an e2e_<theme>_*_test.go file (//go:build e2e)", name, fn.Name.Name, id.Name)
					}
				}
				return true
			})
		}
	}
	assert.Positive(t, tagged, "the e2e files were found")
}
