package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report/classreport"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// TestGradeEmptyShard: a shard that holds none of the listed submissions
// grades nothing, starts no server, exits 0 and leaves its --out (empty) for
// the merge; the merge of only empty shards says there is nothing to merge.
func TestGradeEmptyShard(t *testing.T) {
	wheels := filepath.Join(repoRoot(t), ".cache", "wheels")
	other := submission.ShardOf("empty", 2)%2 + 1 // the shard "empty" is not in
	out := filepath.Join(t.TempDir(), "shard")
	var stdout, stderr bytes.Buffer
	code := gradeMain([]string{"--out", out, "--wheels", wheels, "--shard", fmt.Sprintf("%d/2", other), "testdata/empty"}, &stdout, &stderr)
	require.Equal(t, 0, code, "%s%s", stdout.String(), stderr.String())
	assert.Contains(t, stdout.String(), fmt.Sprintf("shard %d/2 holds 0 of the 1 submission(s)", other))
	entries, err := os.ReadDir(out)
	require.NoError(t, err, "the shard's --out exists")
	assert.Empty(t, entries)

	stdout.Reset()
	stderr.Reset()
	assert.Equal(t, 2, classMain([]string{filepath.Join(t.TempDir(), "class"), out}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "no report bundle in")
}

func TestClassUsageErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, classMain([]string{"only-out"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "name the summary directory OUT and at least one run directory")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, classreport.ClassMarkdownFile), []byte("# earlier\n"), 0o644))
	stderr.Reset()
	assert.Equal(t, 2, classMain([]string{dir, t.TempDir()}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "already holds a class summary")
	assert.Equal(t, "# earlier\n", string(mustReadFile(t, filepath.Join(dir, classreport.ClassMarkdownFile))), "an earlier summary is not overwritten")

	stderr.Reset()
	assert.Equal(t, 0, classMain([]string{"-h"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "usage: acceptance class OUT RUN_DIR...")
}
