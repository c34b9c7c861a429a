package steps

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/subfile"
)

// TestContractRecord: what contractRecord adds to subfile.Read (which caps
// the file, never follows a link and names a file the box kept back:
// harness/subfile's tests): the contract's cap, the entry's words for a file
// missing or unreadable, and the record it reads.
func TestContractRecord(t *testing.T) {
	out := t.TempDir()
	s := &scenario{inv: &invocation{launch: launch{OutDir: out, RelDir: "subject-contract"}}}
	p := filepath.Join(out, "contract.json")

	_, err := contractRecord(s)
	assert.EqualError(t, err, "the contract command wrote no {out}/contract.json")

	require.NoError(t, os.WriteFile(p, []byte(`{"exchanges":[{"step":"create"}]}`), 0o644))
	rec, err := contractRecord(s)
	require.NoError(t, err)
	assert.Contains(t, rec, "create")

	// One byte over the contract's cap (a sparse file): subfile.Read's
	// reason, said of the contract command.
	if err := os.Truncate(p, subfile.ContractJSON+1); err != nil {
		t.Skipf("cannot make a sparse file here: %v", err)
	}
	_, want := subfile.Read(p, "{out}/contract.json", subfile.ContractJSON)
	require.Error(t, want)
	_, err = contractRecord(s)
	assert.EqualError(t, err, "the contract command's "+want.Error())
}
