package grading

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/submission"
)

// The exit code that matters most: graded failures, then harness errors,
// then incomplete, then passed; whatever the order they come in.
func TestWorseExit(t *testing.T) {
	for _, c := range []struct {
		codes []int
		want  int
	}{
		{[]int{0, 0}, 0},
		{[]int{0, 3}, 3},
		{[]int{3, 2, 0}, 2},
		{[]int{2, 1, 3}, 1},
		{[]int{1, 2}, 1},
	} {
		worst := 0
		for _, code := range c.codes {
			worst = WorseExit(worst, code)
		}
		assert.Equal(t, c.want, worst, "%v", c.codes)
	}
}

// Patterns expand in order, duplicates go, files beside the directories are
// skipped, and a pattern that matches nothing is an error.
func TestExpandDirs(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"b", "a"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "class", d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "class", "notes.txt"), nil, 0o644))
	got, err := ExpandDirs([]string{filepath.Join(root, "class", "*"), filepath.Join(root, "class", "a")})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(root, "class", "a"), filepath.Join(root, "class", "b")}, got)
	_, err = ExpandDirs([]string{filepath.Join(root, "nothing-*")})
	assert.ErrorContains(t, err, "matches nothing")
}

// A shard keeps its share with each directory's position in the whole list,
// and the shares of all shards are the whole list once.
func TestShardKeepsPositions(t *testing.T) {
	dirs := []string{"s/alice", "s/bob", "s/carol", "s/dave", "s/eve"}
	seen := map[string]int{}
	for k := 1; k <= 2; k++ {
		sh, err := submission.ParseShard(map[int]string{1: "1/2", 2: "2/2"}[k])
		require.NoError(t, err)
		kept, pos := Shard(dirs, sh)
		require.Len(t, pos, len(kept))
		for i, d := range kept {
			assert.Equal(t, dirs[pos[i]], d, "the position is the directory's in the whole list")
			seen[d]++
		}
	}
	for _, d := range dirs {
		assert.Equal(t, 1, seen[d], "%s is in exactly one shard", d)
	}
}
