package subfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sparse makes a sparse file of size bytes (skips where the filesystem
// cannot hold one).
func sparse(t *testing.T, p string, size int64) {
	t.Helper()
	f, err := os.Create(p)
	require.NoError(t, err)
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Skipf("cannot make a %d-byte sparse file here: %v", size, err)
	}
}

// TestReadNamesTheFileNotTheHost: reasons name the file as the
// submission knows it ({out}/report.md), never the grader's paths.
func TestReadNamesTheFileNotTheHost(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.md")
	sparse(t, p, ReportMD+1)
	_, err := Read(p, "{out}/report.md", ReportMD)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), dir)
	assert.Contains(t, err.Error(), "over the grader's cap of 8388608 bytes")

	require.NoError(t, os.Remove(p))
	require.NoError(t, os.Mkdir(p, 0o755))
	_, err = Read(p, "{out}/report.md", ReportMD)
	require.Error(t, err)
	assert.Equal(t, "{out}/report.md is not a regular file", err.Error())
}
