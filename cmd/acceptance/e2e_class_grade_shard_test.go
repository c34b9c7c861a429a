//go:build e2e

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/classreport"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// TestGradeThreeShardsEqualOneCall: sharding a class changes no grade. One class
// graded as 3 shards (`grade --shard K/3`, three processes at once, each with
// its own bundled server and state directory), merged by `acceptance class`,
// gives every submission the same verdict, score and per-entry verdicts as
// the same class graded in one call; each submission is graded in exactly
// one shard, the one its name's hash picks, whatever the list's order. Kept
// small for CI: four calibration submissions on M0 and maintainability
// (their own contract check and test commands, no subject run), as
// TestGradeClassOf20 does.
func TestGradeThreeShardsEqualOneCall(t *testing.T) {
	e := requireSubjectEnv(t)
	gradingEnv(t)
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	tmp := t.TempDir()
	// The bad-* submissions run ../student/contract.py: copy the whole set.
	out, err := exec.Command("cp", "-r", filepath.Join(e.root, "fixtures", "submissions")+"/.", filepath.Join(tmp, "subs")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	var dirs []string
	for _, n := range shardClass {
		dirs = append(dirs, filepath.Join(tmp, "subs", n))
	}
	common := []string{"--wheels", e.wheels, "--parallel", "2", "--seed", "7", "--tags", "@milestone:M0,@criterion:maintainability"}

	// The class in one call.
	one := filepath.Join(tmp, "one")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := dispatch(append(append([]string{"grade", "--out", one, "--state-dir", t.TempDir(), "--baselines", t.TempDir()}, common...), dirs...), &stdout, &stderr)
	t.Logf("one call: exit %d in %s\n%s%s", code, time.Since(start).Round(time.Second), stdout.String(), stderr.String())
	oneDocs := docsBySubmission(t, one)
	require.Len(t, oneDocs, len(shardClass))

	// The same class as three shards, three processes at once, the list
	// reversed in one of them (the share does not depend on the order).
	self, err := os.Executable()
	require.NoError(t, err)
	var wg sync.WaitGroup
	shardDirs := make([]string, 3)
	codes := make([]int, 3)
	logs := make([]bytes.Buffer, 3)
	start = time.Now()
	for k := 1; k <= 3; k++ {
		shardDirs[k-1] = filepath.Join(tmp, fmt.Sprintf("shard-%d", k))
		list := append([]string(nil), dirs...)
		if k == 2 {
			for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
				list[i], list[j] = list[j], list[i]
			}
		}
		args := append(append([]string{"grade", "--shard", fmt.Sprintf("%d/3", k), "--out", shardDirs[k-1],
			"--state-dir", t.TempDir(), "--baselines", t.TempDir()}, common...), list...)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(self, args...)
			cmd.Stdout, cmd.Stderr = &logs[i], &logs[i]
			err := cmd.Run()
			codes[i] = cmd.ProcessState.ExitCode()
			if err != nil && codes[i] < 0 {
				logs[i].WriteString("\n" + err.Error())
			}
		}(k - 1)
	}
	wg.Wait()
	for i := range 3 {
		t.Logf("shard %d/3: exit %d\n%s", i+1, codes[i], logs[i].String())
	}
	t.Logf("three shards at once: %s", time.Since(start).Round(time.Second))

	seen := map[string]int{}
	for i, d := range shardDirs {
		for name := range docsBySubmission(t, d) {
			seen[name]++
			assert.Equal(t, i+1, submission.ShardOf(name, 3), "%s graded in shard %d, its hash's", name, i+1)
		}
	}
	for _, n := range shardClass {
		assert.Equal(t, 1, seen[n], "%s graded in exactly one shard", n)
	}

	// Merged, the shards are the one-call class.
	merged := filepath.Join(tmp, "merged")
	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, dispatch(append([]string{"class", merged}, shardDirs...), &stdout, &stderr), "%s%s", stdout.String(), stderr.String())
	t.Logf("acceptance class:\n%s", stdout.String())
	m, err := classreport.MergeClass(filepath.Join(tmp, "merged-again"), shardDirs)
	require.NoError(t, err)
	require.Len(t, m.Bundles, len(shardClass))
	assert.Empty(t, m.Twice)
	for _, b := range m.Bundles {
		d, err := report.ReadDocument(b)
		require.NoError(t, err)
		o, ok := oneDocs[d.Submission]
		require.True(t, ok, "%s graded in one call", d.Submission)
		assert.Equal(t, o.Verdict, d.Verdict, "%s: verdict", d.Submission)
		assert.Equal(t, o.Score, d.Score, "%s: score", d.Submission)
		// NN- is the position in the list given; shard 2 was given it reversed.
		assert.Equal(t, filepath.Base(o.Bundle())[3:], filepath.Base(b)[3:], "%s: the same bundle name", d.Submission)
		assert.Equal(t, entryVerdicts(o.Document), entryVerdicts(d), "%s: every entry's verdict", d.Submission)
	}
	md := string(mustReadFile(t, filepath.Join(merged, classreport.ClassMarkdownFile)))
	assert.Contains(t, md, fmt.Sprintf("# Class summary: %d submissions", len(shardClass)))
	oneMD := string(mustReadFile(t, filepath.Join(one, classreport.ClassMarkdownFile)))
	assert.Equal(t, classCounts(oneMD), classCounts(md), "the class's tallies")

	// Merging the one call's class beside the shards: every submission graded twice, shown once.
	stdout.Reset()
	require.Equal(t, 0, dispatch(append([]string{"class", filepath.Join(tmp, "both"), one}, shardDirs...), &stdout, &stderr), "%s", stderr.String())
	assert.Contains(t, string(mustReadFile(t, filepath.Join(tmp, "both", classreport.ClassMarkdownFile))), fmt.Sprintf("# Class summary: %d submissions", len(shardClass)))
	assert.Contains(t, stdout.String(), "graded 2 times")
}
