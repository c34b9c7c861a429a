package core

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/recompute"
)

// The recomputation is shared by content: the same bytes give the same
// statistics as recompute.File (with the caller's own path), and a copy that
// differs in one byte is recomputed, never served from the cache.
func TestInputsRecomputeSharedByContent(t *testing.T) {
	in, err := NewInputs()
	require.NoError(t, err)
	defer in.Close()
	dir := t.TempDir()
	csv := "region,units\nnorth,3\nsouth,4\n"
	a, b, c := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv"), filepath.Join(dir, "c.csv")
	require.NoError(t, os.WriteFile(a, []byte(csv), 0o644))
	require.NoError(t, os.WriteFile(b, []byte(csv), 0o644))
	require.NoError(t, os.WriteFile(c, []byte("region,units\nnorth,3\nsouth,5\n"), 0o644))

	sa, err := in.Recompute(a)
	require.NoError(t, err)
	sb, err := in.Recompute(b)
	require.NoError(t, err)
	want, err := recompute.File(b)
	require.NoError(t, err)
	wj, err := json.Marshal(want)
	require.NoError(t, err)
	gj, err := json.Marshal(sb)
	require.NoError(t, err)
	assert.JSONEq(t, string(wj), string(gj), "a cached recomputation equals a fresh one")
	assert.Equal(t, a, sa.Path)
	assert.Equal(t, b, sb.Path)
	assert.Same(t, sa.Columns[0], sb.Columns[0], "the second reading came from the cache")

	sc, err := in.Recompute(c)
	require.NoError(t, err)
	assert.NotEqual(t, sa.SHA256, sc.SHA256)
	assert.Equal(t, 8.0, sc.Columns[1].Sum)
}

// The large CSV is generated once per session and copied: every copy holds
// the same bytes, and the session's own file goes with Close.
func TestInputsLargeCSVGeneratedOnce(t *testing.T) {
	in, err := NewInputs()
	require.NoError(t, err)
	p1, err := in.LargeCSV(filepath.Join(t.TempDir(), "one"))
	require.NoError(t, err)
	st1, err := os.Stat(in.large.path)
	require.NoError(t, err)
	p2, err := in.LargeCSV(filepath.Join(t.TempDir(), "two"))
	require.NoError(t, err)
	st2, err := os.Stat(in.large.path)
	require.NoError(t, err)
	assert.Equal(t, st1.ModTime(), st2.ModTime(), "not generated again")
	h1, err := fileSHA256(p1)
	require.NoError(t, err)
	h2, err := fileSHA256(p2)
	require.NoError(t, err)
	assert.Equal(t, h1, h2)
	i1, _ := os.Stat(p1)
	assert.GreaterOrEqual(t, i1.Size(), int64(50<<20))
	assert.False(t, os.SameFile(i1, st1), "a copy, not the session's file")
	in.Close()
	_, err = os.Stat(in.dir)
	assert.True(t, os.IsNotExist(err))
}
