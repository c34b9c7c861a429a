package core

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReapDeadInputs: a killed session's inputs (lock free, or no lock and
// old) are removed at the next session's start; a live session's and a
// just-made directory without its lock yet are kept.
func TestReapDeadInputs(t *testing.T) {
	tmp := t.TempDir()
	mk := func(name string) string {
		d := filepath.Join(tmp, inputsPrefix+name)
		require.NoError(t, os.MkdirAll(d, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(d, "large.csv"), []byte("x"), 0o600))
		return d
	}
	live := mk("live")
	lock, err := lockInputs(live)
	require.NoError(t, err)
	defer lock.Close()

	dead := mk("dead")
	f, err := lockInputs(dead)
	require.NoError(t, err)
	require.NoError(t, f.Close()) // the session died: its lock went with it

	oldNoLock := mk("old")
	past := time.Now().Add(-2 * lockYoungerThan)
	require.NoError(t, os.Chtimes(oldNoLock, past, past))
	fresh := mk("fresh")
	other := filepath.Join(tmp, "not-ours")
	require.NoError(t, os.MkdirAll(other, 0o700))

	reaped := reapDeadInputs(tmp)
	assert.ElementsMatch(t, []string{dead, oldNoLock}, reaped)
	for _, d := range []string{live, fresh, other} {
		assert.DirExists(t, d)
	}
	for _, d := range []string{dead, oldNoLock} {
		assert.NoDirExists(t, d)
	}
}

// TestInputsLockedWhileOpen: a session's own directory is locked until Close,
// so another session's reap leaves it alone.
func TestInputsLockedWhileOpen(t *testing.T) {
	in, err := NewInputs()
	require.NoError(t, err)
	assert.False(t, inputsDead(in.dir))
	reapDeadInputs(filepath.Dir(in.dir))
	assert.DirExists(t, in.dir)
	in.Close()
	assert.NoDirExists(t, in.dir)
}
