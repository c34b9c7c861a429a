package classreport

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// mergeBundle writes a report bundle at dir: the fixture document as graded
// of submission sub, ended at end, with these versions.
func mergeBundle(t *testing.T, dir, sub string, end time.Time, versions map[string]string, verdict rubric.Overall) {
	t.Helper()
	d := reporttest.FixtureDoc(t)
	d.Submission, d.RunID, d.EndedAt, d.Verdict = sub, "run-"+filepath.Base(filepath.Dir(dir))+"-"+sub, end, verdict
	d.Versions = versions
	var b bytes.Buffer
	require.NoError(t, render.WriteJSON(&b, d))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, report.JSONFile), b.Bytes(), 0o644))
}

func vers(acceptance, rubricHash string) map[string]string {
	return map[string]string{"acceptance": acceptance, "rubric": rubricHash, "go": "go1.26"}
}

// TestMergeClassRefusesMixedVersions: bundles graded by different suite
// versions, or under different rubric hashes, are not merged; the error
// names the values and the bundles, and no summary is written.
func TestMergeClassRefusesMixedVersions(t *testing.T) {
	now := time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name             string
		second           map[string]string
		want, wantValues string
	}{
		{"suite version", vers("v1.1.0", "abc123abc123"), "different suite versions", `"v1.0.0"`},
		{"rubric hash", vers("v1.0.0", "ffff0000ffff"), "different rubric hashes", `"ffff0000ffff"`},
		{"no rubric recorded", map[string]string{"acceptance": "v1.0.0"}, "different rubric hashes", `"(none recorded)"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			mergeBundle(t, filepath.Join(root, "shard-1", "01-alice"), "alice", now, vers("v1.0.0", "abc123abc123"), rubric.OverallPassed)
			mergeBundle(t, filepath.Join(root, "shard-2", "02-bob"), "bob", now, tc.second, rubric.OverallPassed)
			out := filepath.Join(root, "class")
			_, err := MergeClass(out, []string{filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2")})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), tc.wantValues)
			assert.Contains(t, err.Error(), filepath.Join(root, "shard-2", "02-bob"), "the error says where")
			assert.NoFileExists(t, filepath.Join(out, ClassMarkdownFile), "a refused merge writes nothing")
		})
	}
}

// TestMergeClassGradedTwice: three runs (two shards and a re-run of one
// submission) merge into one summary; the submission graded twice is one
// line, counted once (the later grading), naming both runs; the others are
// in the class order their bundle names give.
func TestMergeClassGradedTwice(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)
	v := vers("v1.0.0", "abc123abc123")
	mergeBundle(t, filepath.Join(root, "shard-1", "02-bob"), "bob", t0, v, rubric.OverallNotPassed)
	mergeBundle(t, filepath.Join(root, "shard-2", "01-alice"), "alice", t0, v, rubric.OverallPassed)
	mergeBundle(t, filepath.Join(root, "shard-2", "03-carol"), "carol", t0, v, rubric.OverallPassed)
	mergeBundle(t, filepath.Join(root, "rerun", "01-bob"), "bob", t0.Add(time.Hour), v, rubric.OverallPassed)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "shard-3"), 0o755)) // an empty shard
	out := filepath.Join(root, "class")
	m, err := MergeClass(out, []string{filepath.Join(root, "shard-1"), filepath.Join(root, "shard-2"), filepath.Join(root, "shard-3"), filepath.Join(root, "rerun")})
	require.NoError(t, err)
	require.Len(t, m.Twice, 1)
	assert.Equal(t, "bob", m.Twice[0].Submission)
	assert.Equal(t, filepath.Join(root, "rerun", "01-bob"), m.Twice[0].Shown.Bundle, "the later grading is shown")
	assert.Equal(t, []string{filepath.Join(root, "shard-2", "01-alice"), filepath.Join(root, "rerun", "01-bob"), filepath.Join(root, "shard-2", "03-carol")}, m.Bundles)

	rows, err := csv.NewReader(bytes.NewReader(reporttest.MustRead(t, filepath.Join(out, ClassCSVFile)))).ReadAll()
	require.NoError(t, err)
	var students [][]string // class.csv ends with the class's (class) statistics rows
	for _, r := range rows[1:] {
		if !strings.HasPrefix(r[0], "(class)") {
			students = append(students, r)
		}
	}
	require.Len(t, students, 3, "three submissions, one line each")
	var bob []string
	for _, r := range rows[1:] {
		if strings.HasPrefix(r[0], "01-bob") {
			bob = r
		}
	}
	require.NotNil(t, bob, "%v", rows)
	assert.Contains(t, bob[0], "graded in 2 runs")
	assert.Contains(t, bob[0], filepath.Join(root, "rerun")+" (run run-rerun-bob) [shown: the latest]")
	assert.Contains(t, bob[0], filepath.Join(root, "shard-1")+" (run run-shard-1-bob)")
	assert.Equal(t, string(rubric.OverallPassed), bob[2], "the later grading's verdict")
	md := string(reporttest.MustRead(t, filepath.Join(out, ClassMarkdownFile)))
	assert.Contains(t, md, "# Class summary: 3 submissions")
	assert.Contains(t, md, "Passed 3, not passed 0", "bob's earlier not-passed grading is not counted")
	assert.FileExists(t, filepath.Join(out, ClassHTMLFile))

	_, err = MergeClass(filepath.Join(root, "class2"), []string{filepath.Join(root, "nope")})
	assert.ErrorContains(t, err, "no such file")
}
