//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/classreport"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// TestRepeatReportsFlakyEndToEnd grades, with --repeat 2, the testdata
// submission and a copy whose contract check passes in one repetition and
// fails in the other. The copy's M0 is flaky — its own verdict in
// report.json, results.jsonl, report.md, junit.xml, report.html and
// results.json — earns nothing, and its run is not passed (exit 1); the
// steady one's M0 passed both times and stays passed. The class summary
// counts it flaky, `acceptance diff` from the steady bundle to the flaky one
// reports the regression, and `acceptance review` refuses to pass it
// without an override reason.
func TestRepeatReportsFlakyEndToEnd(t *testing.T) {
	requireSandboxes(t)
	gradingEnv(t)
	sub := filepath.Join(t.TempDir(), "flaky")
	src := testdataSubmission(t, "submission")
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(sub, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(sub, rel), b, 0o644)
	}))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "flip.sh"), []byte(flipScript), 0o755))
	manifest, err := os.ReadFile(filepath.Join(sub, "capstone.yaml"))
	require.NoError(t, err)
	m := strings.Replace(string(manifest), `contract: "python3 contract.py --out {out}"`, `contract: "sh flip.sh --out {out}"`, 1)
	m = strings.Replace(m, "name: testdata-reference", "name: flaky", 1)
	require.NotEqual(t, string(manifest), m)
	require.NoError(t, os.WriteFile(filepath.Join(sub, "capstone.yaml"), []byte(m), 0o644))
	readme, err := os.ReadFile(filepath.Join(sub, "README.md"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(sub, "README.md"), append(readme, []byte("\nThe contract check runs `sh flip.sh`.\n")...), 0o644))

	class := filepath.Join(t.TempDir(), "class")
	var stdout, stderr bytes.Buffer
	// The planted flip keeps its state in a file of the submission directory
	// from one command to the next, which the confinement (a private copy of
	// the directory per command) rightly forbids: this test of the flaky
	// verdict grades unconfined, as the flag allows and every report says;
	// --verbose puts the per-scenario lines on the output it checks.
	code := gradeMain(runArgs(t, class, "--tags", "@milestone:M0", "--repeat", "2", "--seed", "3", "--parallel", "1", "--insecure-no-confinement", "--verbose", src, sub), &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	steady := filepath.Join(class, "01-submission")
	out := filepath.Join(class, "02-flaky")
	assert.Equal(t, rubric.Passed, readBundle(t, steady).row(t, "M0").Verdict, "passed in both repetitions")
	b := readBundle(t, out)

	assert.Contains(t, stdout.String(), `flaky         M0: passed 1 of 2 repetitions of "The submission's contract check`)
	m0 := b.row(t, "M0")
	require.Equal(t, rubric.Flaky, m0.Verdict, m0.Reason)
	assert.Contains(t, m0.Reason, "flaky: passed 1 of 2 repetitions")
	assert.Contains(t, m0.Reason, "when it failed: the submission's contract command exited 1")
	assert.Equal(t, rubric.ExitGradedFail, code, "flaky gates like a failure")
	assert.Equal(t, rubric.OverallNotPassed, b.doc.Verdict)
	assert.Contains(t, b.doc.VerdictReason, "M0")
	for _, s := range b.doc.Scoring {
		if s.Item == rubric.ClosedLoop {
			assert.Greater(t, s.Measured, 0.0, "M0 was measured")
			assert.Less(t, s.Earned, s.Measured, "and earned nothing")
		}
	}
	// Both repetitions' evidence is kept.
	for _, d := range []string{"subject-contract", "subject-contract-r2"} {
		_, err := os.Stat(filepath.Join(out, "evidence", d, "invocation.json"))
		assert.NoError(t, err, d)
	}

	flakyLines := 0
	for _, o := range b.results {
		assert.NoError(t, o.Validate())
		if o.ID == rubric.M0 && o.Verdict == rubric.Flaky {
			flakyLines++
		}
	}
	assert.Equal(t, 1, flakyLines, "results.jsonl has M0's flaky outcome")
	assert.Contains(t, b.md, "| **M0** M0 · Contract verification | **FLAKY** | "+render.Cell("flaky: passed 1 of 2"))
	_, failure, _, _ := b.junitCase(t, "M0")
	require.NotNil(t, failure, "flaky is a failure in junit.xml")
	assert.Contains(t, failure.Message, "passed 1 of 2")
	assert.Contains(t, b.junitRaw, `type="flaky"`)

	html, err := os.ReadFile(filepath.Join(out, report.HTMLFile))
	require.NoError(t, err)
	assert.Regexp(t, `id="entry-M0"><td><b>M0</b>[^<]*</td><td class="v flaky">flaky</td>`, string(html))
	// Both repetitions of the contract command are on the page, the failing one red.
	assert.Contains(t, string(html), `<div class="run cmd" id="cmd-contract">`)
	assert.Contains(t, string(html), `<h3>contract (contract-r2): <code>sh flip.sh --out {out}</code>`)
	assert.Regexp(t, `(?s)id="cmd-contract-r2">.*?<rect class="fail"[^>]*><title>contract command: exit 1</title>`, string(html))

	var gs struct {
		Tests []struct {
			Name, Status, Output string
			Score                float64
		} `json:"tests"`
	}
	raw, err := os.ReadFile(filepath.Join(out, report.GradescopeFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &gs))
	found := false
	for _, tc := range gs.Tests {
		if strings.HasPrefix(tc.Name, "M0: ") {
			found = true
			assert.Equal(t, "failed", tc.Status)
			assert.Equal(t, 0.0, tc.Score)
			assert.Contains(t, tc.Output, "passed 1 of 2 repetitions")
		}
	}
	assert.True(t, found, "results.json has M0")

	// The class summary counts it flaky, apart from failed.
	classMD, err := os.ReadFile(filepath.Join(class, classreport.ClassMarkdownFile))
	require.NoError(t, err)
	assert.Contains(t, string(classMD), "1 with a flaky entry")
	assert.Contains(t, string(classMD), "| **M0** M0 · Contract verification | 1 | 0 | 1 | 0 | 0 | 50% |")

	// The upgrade check: steady → flaky is a regression.
	dcode, dout, derr := runCmd("diff", steady, out)
	assert.Equal(t, 1, dcode, dout+derr)
	assert.Contains(t, dout, "M0 passed → flaky")

	// A reviewer cannot pass it without a reason.
	ans := filepath.Join(t.TempDir(), "review.yaml")
	require.NoError(t, os.WriteFile(ans, []byte("reviewer: R\nentries:\n  M0: {verdict: passed}\n"), 0o644))
	rcode, rout, rerr := runCmd("review", "--answers", ans, out)
	assert.NotEqual(t, 0, rcode, rout)
	assert.Contains(t, rerr, "entries.M0.override_reason: M0 was measured by the harness (flaky: ")
	requireNoLeaks(t, append(sandboxIDsIn(t, out), sandboxIDsIn(t, steady)...))
}
