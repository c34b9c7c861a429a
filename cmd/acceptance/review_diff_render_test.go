package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

const bundleFixtures = "../../harness/report/testdata/bundles"

func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := dispatch(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDiffCommandExitCodes(t *testing.T) {
	c := filepath.Join(bundleFixtures, "m0m5-c")
	d := filepath.Join(bundleFixtures, "m0m5-d")
	code, out, errs := runCmd("diff", c, d)
	assert.Equal(t, 0, code, out+errs)
	assert.Contains(t, out, "no regression")

	// Plant a verdict change in a copy of the new bundle's report.json.
	planted := reporttest.CopyBundle(t, d)
	p := filepath.Join(planted, "report.json")
	var doc map[string]any
	require.NoError(t, json.Unmarshal(mustReadFile(t, p), &doc))
	for _, e := range doc["criteria"].([]any) {
		if m := e.(map[string]any); m["id"] == "isolation" {
			m["verdict"], m["reason"] = "failed", "GET after delete answered 200"
		}
	}
	b, _ := json.Marshal(doc)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	code, out, _ = runCmd("diff", c, planted)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "! isolation       passed → failed")

	// Bundles graded under different rubrics: refused (exit 2, saying why),
	// or compared with --across-rubrics and marked at the top.
	other := reporttest.CopyBundle(t, d)
	p = filepath.Join(other, "report.json")
	doc = map[string]any{}
	require.NoError(t, json.Unmarshal(mustReadFile(t, p), &doc))
	doc["versions"].(map[string]any)["rubric"] = "0123456789ab"
	b, _ = json.Marshal(doc)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	code, out, errs = runCmd("diff", c, other)
	assert.Equal(t, 2, code, out+errs)
	assert.Contains(t, errs, "different rubrics")
	assert.Empty(t, out)
	code, out, errs = runCmd("diff", "--across-rubrics", c, other)
	assert.Equal(t, 0, code, out+errs)
	assert.True(t, strings.HasPrefix(out, "!!! NOT COMPARABLE"), out)

	for _, args := range [][]string{{"diff"}, {"diff", c}, {"diff", "--threshold", "0", c, d}, {"diff", "--threshold", "x%", c, d},
		{"diff", t.TempDir(), d}, {"diff", "--floor-ms", "-1", c, d}, {"diff", "--floor-ms", "NaN", c, d},
		{"diff", "--floor-bytes", "+Inf", c, d}} {
		code, _, errs := runCmd(args...)
		assert.Equal(t, 2, code, "%v: %s", args, errs)
	}
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// TestRenderKilledRun: a bundle as a SIGKILLed run leaves it (journal and
// run.json without an end, no reports, an empty cucumber.json) is rendered,
// reported as aborted, and its cucumber.json made valid.
func TestRenderKilledRun(t *testing.T) {
	dir := reporttest.CopyBundle(t, filepath.Join(bundleFixtures, "m0m5-c"))
	require.NoError(t, os.Remove(filepath.Join(dir, "report.json")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cucumber.json"), nil, 0o644))
	var meta map[string]any
	require.NoError(t, json.Unmarshal(mustReadFile(t, filepath.Join(dir, "run.json")), &meta))
	delete(meta, "ended_at")
	b, _ := json.Marshal(meta)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), b, 0o644))

	// The fixture bundle predates signed journals: render refuses it unless
	// told not to verify, and then says so.
	code, out, errs := runCmd("render", "--baselines", "", dir)
	require.Equal(t, 2, code, out+errs)
	assert.Contains(t, errs, "journal refused")
	assert.Contains(t, errs, `no key for run`)
	code, out, errs = runCmd("render", "--baselines", "", "--unsigned", dir)
	require.Equal(t, 0, code, out+errs)
	assert.Contains(t, out, "journal NOT verified (--unsigned)")
	assert.Contains(t, out, "cucumber.json was empty")
	assert.Contains(t, out, "verdict: incomplete")
	for _, f := range []string{"report.md", "report.json", "junit.xml", "report.html", "results.json"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	assert.Equal(t, "[]\n", string(mustReadFile(t, filepath.Join(dir, "cucumber.json"))))
	md := string(mustReadFile(t, filepath.Join(dir, "report.md")))
	assert.Contains(t, md, "Run aborted:** the run ended without finalizing its report")

	code, _, errs = runCmd("render", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "not a report bundle")
}

func TestReviewCommandFromFile(t *testing.T) {
	dir := reporttest.CopyBundle(t, filepath.Join(bundleFixtures, "m0m5-c"))
	answers := filepath.Join(t.TempDir(), "review.yaml")
	require.NoError(t, os.WriteFile(answers, []byte("reviewer: Rita\nentries:\n  cost: {verdict: passed, points: 9}\n"), 0o644))
	code, out, errs := runCmd("review", "--answers", answers, dir)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, errs, "entries.cost.points: 9 exceeds the entry's weight 7.5")

	var qs strings.Builder
	for i := 1; i <= 15; i++ {
		fmt.Fprintf(&qs, "  %d: {verdict: passed}\n", i)
	}
	require.NoError(t, os.WriteFile(answers, []byte("reviewer: Rita\nentries:\n  cost: {verdict: passed}\n  M5: {verdict: passed}\nquestions:\n"+qs.String()), 0o644))
	before := mustReadFile(t, filepath.Join(dir, "report.json"))
	code, out, errs = runCmd("review", "--answers", answers, dir)
	require.Equal(t, 0, code, out+errs)
	assert.Contains(t, out, "final score: 29 of 100 (measured by the harness 14, judged by the reviewer 15)")
	assert.Equal(t, before, mustReadFile(t, filepath.Join(dir, "report.json")))

	code, _, _ = runCmd("review")
	assert.Equal(t, 2, code)
	code, _, errs = runCmd("review", "--answers", answers, "--redo", dir)
	assert.Equal(t, 2, code, errs)
}

// TestRenderRefusesAForgedJournal: the forger's recovery path. A submission
// appends the reference's results.jsonl lines to its own journal and kills
// the grader; `acceptance render` of its bundle refuses, naming the lines,
// and the honest bundle still renders.
func TestRenderRefusesAForgedJournal(t *testing.T) {
	keys, err := report.DefaultJournalKeyDir()
	require.NoError(t, err)
	root := t.TempDir()
	grade := func(name string, pass bool) string {
		dir := filepath.Join(root, name)
		// The run id is this run's alone: t.TempDir's own base is 001 in
		// every run, and the key directory is the test binary's, so a second
		// run of the test (-count) found the first one's key (O_EXCL).
		b, err := report.Open(dir, rubric.Course, report.Meta{RunID: "run-" + name + "-" + filepath.Base(filepath.Dir(root)), Target: "mock",
			TargetKind: rubric.TargetMock, Subject: name}, report.Options{JournalKeys: keys})
		require.NoError(t, err)
		rec := b.Results().Fail
		if pass {
			rec = b.Results().Pass
		}
		for _, id := range []rubric.ID{rubric.M0, rubric.Function, rubric.Isolation} {
			require.NoError(t, rec(id, "s", "r"))
		}
		require.NoError(t, b.Close()) // killed before Finalize: no report yet
		return dir
	}
	ref, forger := grade("reference", true), grade("hostile-forger", false)
	theirs := mustReadFile(t, filepath.Join(ref, report.JournalFile))
	f, err := os.OpenFile(filepath.Join(forger, report.JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(theirs)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	code, out, errs := runCmd("render", "--baselines", "", forger)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, errs, "journal refused")
	assert.Contains(t, errs, "line 4 (M0 passed) belongs to another run")
	assert.NoFileExists(t, filepath.Join(forger, "report.json"), "a refused journal is never rendered")
	code, out, errs = runCmd("render", "--baselines", "", ref)
	assert.Equal(t, 0, code, errs)
	assert.Contains(t, out, "score 15 of 15 measured")
}
