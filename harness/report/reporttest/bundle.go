// Package reporttest holds test helpers shared by the tests of harness/report,
// its packages (render, classreport, compare) and the commands that read
// report bundles: the fixture document, golden files, bundle copies, the
// Chromium driver and the class-page checks. It is imported by tests only.
package reporttest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// CopyBundle copies a fixture bundle (a directory tree) into a fresh
// temporary directory and returns the copy's path; its base name is src's.
func CopyBundle(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	}))
	return dst
}
