package subfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// TestReadCapsAndNeverFollows: a 1 TiB sparse file (which once ran the
// grader out of memory) fails at once over its cap, a link to /etc/shadow
// is refused without reading or naming its target, a file the box kept back
// at the copy-out is named with why, and a missing one is os.ErrNotExist.
func TestReadCapsAndNeverFollows(t *testing.T) {
	out := t.TempDir()
	p := filepath.Join(out, "contract.json")

	require.NoError(t, os.Symlink("/etc/shadow", p))
	_, err := Read(p, "{out}/contract.json", ContractJSON)
	assert.EqualError(t, err, "{out}/contract.json is a symbolic link; the grader reads only regular files and never follows a link")

	require.NoError(t, os.Remove(p))
	_, err = Read(p, "{out}/contract.json", ContractJSON)
	assert.EqualError(t, err, "{out}/contract.json does not exist: file does not exist")
	assert.True(t, errors.Is(err, os.ErrNotExist))

	// Confined, the box kept it back at the copy-out: the reason says so.
	require.NoError(t, os.WriteFile(out+".dropped.json", []byte(`{"contract.json":"1099511627776 bytes, over the 64 MiB cap of a file"}`), 0o644))
	_, err = Read(p, "{out}/contract.json", ContractJSON)
	assert.EqualError(t, err, "{out}/contract.json was not copied out of the submission's box: 1099511627776 bytes, over the 64 MiB cap of a file")
	require.NoError(t, os.Remove(out+".dropped.json"))

	sparse(t, p, 1<<40)
	start := time.Now()
	_, err = Read(p, "{out}/contract.json", ContractJSON)
	assert.EqualError(t, err, "{out}/contract.json is 1099511627776 bytes, over the grader's cap of 16777216 bytes for it")
	assert.Less(t, time.Since(start), 5*time.Second)
}
