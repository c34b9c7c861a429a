package steps

import (
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

// TestContractRecordCapsAndNeverFollows: a 1 TiB sparse contract.json (which
// once ran the grader out of memory) and one linked to /etc/shadow are each a
// failure of the entry saying what the submission did, at once, never a crash
// and never a read of the link's target.
func TestContractRecordCapsAndNeverFollows(t *testing.T) {
	out := t.TempDir()
	s := &scenario{inv: &invocation{launch: launch{OutDir: out, RelDir: "subject-contract"}}}
	p := filepath.Join(out, "contract.json")

	sparse(t, p, 1<<40)
	start := time.Now()
	_, err := contractRecord(s)
	require.Error(t, err)
	assert.Equal(t, "the contract command's {out}/contract.json is 1099511627776 bytes, over the grader's cap of 16777216 bytes for it", err.Error())
	assert.Less(t, time.Since(start), 5*time.Second)

	require.NoError(t, os.Remove(p))
	require.NoError(t, os.Symlink("/etc/shadow", p))
	_, err = contractRecord(s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "{out}/contract.json is a symbolic link")
	assert.NotContains(t, err.Error(), "/etc/shadow")

	require.NoError(t, os.Remove(p))
	_, err = contractRecord(s)
	assert.EqualError(t, err, "the contract command wrote no {out}/contract.json")

	// Confined, the box kept it back at the copy-out: the reason says so.
	require.NoError(t, os.WriteFile(out+".dropped.json", []byte(`{"contract.json":"1099511627776 bytes, over the 64 MiB cap of a file"}`), 0o644))
	_, err = contractRecord(s)
	assert.EqualError(t, err, "the contract command's {out}/contract.json was not copied out of the submission's box: 1099511627776 bytes, over the 64 MiB cap of a file")
	require.NoError(t, os.Remove(out+".dropped.json"))

	require.NoError(t, os.WriteFile(p, []byte(`{"exchanges":[{"step":"create"}]}`), 0o644))
	rec, err := contractRecord(s)
	require.NoError(t, err)
	assert.Contains(t, rec, "create")
}
