//go:build e2e

package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/classreport"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// TestGradeClassOf20: 20 submissions (the calibration set, some repeated)
// graded in one `acceptance grade` call; the class summary's numbers equal
// the individual bundles'. The 16 calibration submissions and
// copies of four of them are graded in one call on M0 and maintainability
// only (each submission's own contract check and test commands, no subject
// run: under a minute for the twenty; TestCalibration grades the whole
// suite). Every number of class.csv and class.md is checked against the
// bundles' own report.json, the planted defects these tags can see
// (bad-empty, bad-lying-contract, bad-failing-tests) fail where they must
// and nowhere else, and a review of one bundle shows its final score in the
// class summary. The wall time per submission
// against grading one by one is h4-speed's benchmark, not this test.
func TestGradeClassOf20(t *testing.T) {
	e := requireSubjectEnv(t)
	gradingEnv(t)
	// The Python submissions run `python3` from PATH: the SDK venv first (fixtures/submissions/README.md).
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))

	tmp := t.TempDir()
	for _, copyDir := range []string{"a", "b"} {
		require.NoError(t, os.MkdirAll(filepath.Join(tmp, copyDir), 0o755))
		// The bad-* submissions run ../student/contract.py: copy the whole set.
		out, err := exec.Command("cp", "-r", filepath.Join(e.root, "fixtures", "submissions")+"/.", filepath.Join(tmp, copyDir)).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	var dirs, names []string
	for _, c := range classMembers {
		dirs = append(dirs, filepath.Join(tmp, "a", c))
		names = append(names, c)
	}
	for _, r := range classRepeats {
		dirs = append(dirs, filepath.Join(tmp, "b", r))
		names = append(names, r)
	}
	require.Len(t, dirs, 20)

	class, stateDir := filepath.Join(tmp, "class"), t.TempDir()
	args := append([]string{"grade",
		"--out", class,
		"--state-dir", stateDir,
		"--wheels", e.wheels,
		"--baselines", t.TempDir(),
		"--parallel", "2",
		"--tags", "@milestone:M0,@criterion:maintainability",
	}, dirs...)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := dispatch(args, &stdout, &stderr)
	t.Logf("acceptance grade (%d submissions): exit %d in %s\n%s%s", len(dirs), code, time.Since(start).Round(time.Second), stdout.String(), stderr.String())
	assert.Equal(t, rubric.ExitGradedFail, code, "the worst of the bundles: bad-empty and bad-lying-contract fail M0")

	// One bundle per submission, in the order given.
	bundles := make([]string, len(dirs))
	docs := make([]report.Document, len(dirs))
	for i := range dirs {
		matches, err := filepath.Glob(filepath.Join(class, fmt.Sprintf("%02d-*", i+1)))
		require.NoError(t, err)
		require.Len(t, matches, 1, "bundle %d (%s)", i+1, names[i])
		bundles[i] = matches[0]
		docs[i], err = report.ReadDocument(bundles[i])
		require.NoError(t, err, bundles[i])
		assert.Contains(t, stdout.String(), report.SummaryLine(docs[i]), "the progress line of %s is its bundle's", names[i])
	}

	// class.csv: every number is the bundle's own.
	// Live progress in a plain log: a line per submission as it finished and
	// the running status after it, without control codes.
	assert.NotContains(t, stdout.String(), "\x1b")
	assert.Contains(t, stdout.String(), fmt.Sprintf("progress: %d/%d done", len(dirs), len(dirs)))
	assert.NotContains(t, stdout.String(), "running the submission's", "per-scenario lines go to each bundle's progress.log, not the output")

	rows, err := csv.NewReader(bytes.NewReader(mustReadFile(t, filepath.Join(class, classreport.ClassCSVFile)))).ReadAll()
	require.NoError(t, err)
	rows = classCSVSubmissions(rows)
	require.Len(t, rows, 1+len(dirs))
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	type tally struct{ passed, failed, flaky, notMeasured, errored int }
	tallies := map[rubric.ID]*tally{}
	var order []rubric.ID
	verdicts := map[rubric.Overall]int{}
	for i, d := range docs {
		row := rows[i+1]
		assert.Equal(t, filepath.Base(bundles[i]), row[col["bundle"]])
		assert.Equal(t, string(d.Verdict), row[col["verdict"]], names[i])
		assert.Equal(t, strconv.Itoa(d.ExitCode), row[col["exit_code"]], names[i])
		assert.Equal(t, rubric.Num(d.Score.Earned), row[col["score_earned"]], names[i])
		assert.Equal(t, rubric.Num(d.Score.Measured), row[col["score_measured"]], names[i])
		assert.Equal(t, rubric.Num(d.Score.Total), row[col["score_total"]], names[i])
		assert.Empty(t, row[col["final_score"]], "nothing reviewed yet")
		for _, it := range d.Scoring {
			assert.Equal(t, rubric.Num(it.Earned), row[col[string(it.Item)+"_earned"]], "%s %s", names[i], it.Item)
		}
		verdicts[d.Verdict]++
		for _, r := range d.AllEntries() {
			assert.Equal(t, string(r.Verdict), row[col[string(r.ID)]], "%s %s", names[i], r.ID)
			tl, ok := tallies[r.ID]
			if !ok {
				tl = &tally{}
				tallies[r.ID] = tl
				order = append(order, r.ID)
			}
			switch r.Verdict {
			case rubric.Passed:
				tl.passed++
			case rubric.Failed:
				tl.failed++
			case rubric.Flaky:
				tl.flaky++
			case rubric.HarnessError:
				tl.errored++
			default:
				tl.notMeasured++
			}
		}
	}

	// class.md: the counts and pass rates per entry add up from the bundles.
	md := string(mustReadFile(t, filepath.Join(class, classreport.ClassMarkdownFile)))
	assert.Contains(t, md, fmt.Sprintf("# Class summary: %d submissions", len(dirs)))
	assert.Contains(t, md, fmt.Sprintf("Passed %d, not passed %d, incomplete %d.", verdicts[rubric.OverallPassed], verdicts[rubric.OverallNotPassed], verdicts[rubric.OverallIncomplete]))
	for _, id := range order {
		tl := tallies[id]
		rate := "n/a"
		if m := tl.passed + tl.failed + tl.flaky; m > 0 {
			rate = strconv.FormatFloat(float64(tl.passed)*100/float64(m), 'f', 0, 64) + "%"
		}
		want := fmt.Sprintf(" | %d | %d | %d | %d | %d | %s |", tl.passed, tl.failed, tl.flaky, tl.notMeasured, tl.errored, rate)
		line := ""
		for _, l := range strings.Split(md, "\n") {
			if strings.HasPrefix(l, "| **"+string(id)+"** ") {
				line = l
			}
		}
		assert.True(t, strings.HasSuffix(line, want), "class.md's row of %s %q should end with %q", id, line, want)
	}
	// What the calibration set plants, seen through the summary: with these
	// tags only the contract check (M0, observability) and the submission's
	// own tests (M4, maintainability) are measured.
	plantedFails := map[string][]rubric.ID{
		"bad-empty":          {rubric.M0, rubric.Observability, rubric.M4, rubric.Maintainability},
		"bad-lying-contract": {rubric.M0, rubric.Observability},
		"bad-failing-tests":  {rubric.M4, rubric.Maintainability},
	}
	for i, n := range names {
		for _, id := range []rubric.ID{rubric.M0, rubric.Observability, rubric.M4, rubric.Maintainability} {
			want := rubric.Passed
			for _, f := range plantedFails[n] {
				if f == id {
					want = rubric.Failed
				}
			}
			r := rowOf(t, docs[i], id)
			assert.Equal(t, want, r.Verdict, "%s %s: %s", n, id, r.Reason)
		}
	}
	assert.Equal(t, tally{passed: 16, failed: 4}, *tallies[rubric.M0], "M0: bad-empty and bad-lying-contract, each twice")
	assert.Equal(t, tally{passed: 17, failed: 3}, *tallies[rubric.M4], "M4: bad-empty twice and bad-failing-tests")
	assert.Contains(t, md, "| **M0** M0 · Contract verification | 16 | 4 | 0 | 0 | 0 | 80% |")
	assert.Contains(t, md, "| **M4** M4 · Engineering | 17 | 3 | 0 | 0 | 0 | 85% |")

	// A review of one bundle (an override of the lying contract's M0, with a
	// reason) shows its final score in the class summary; the others stay
	// unreviewed.
	last := len(dirs) - 2 // the second bad-lying-contract
	require.Equal(t, "bad-lying-contract", names[last])
	answers := filepath.Join(tmp, "review.yaml")
	require.NoError(t, os.WriteFile(answers, []byte("reviewer: Rita\nentries:\n  M0: {verdict: passed, override_reason: \"the keyless request went through the course's proxy, which the server cannot see\"}\n"), 0o644))
	rc, out, errs := runCmd("review", "--answers", answers, bundles[last])
	require.Equal(t, 0, rc, out+errs)
	assert.Contains(t, out, "updated the class summary "+filepath.Join(class, classreport.ClassMarkdownFile))
	j, err := report.LoadJudgments(bundles[last])
	require.NoError(t, err)
	f := report.ComputeFinal(docs[last], j)
	assert.Equal(t, 5.0, f.OverridePoints, "M0's weight, by override")
	rows, err = csv.NewReader(bytes.NewReader(mustReadFile(t, filepath.Join(class, classreport.ClassCSVFile)))).ReadAll()
	require.NoError(t, err)
	rows = classCSVSubmissions(rows)
	require.Len(t, rows, 1+len(dirs), "the same bundles")
	for i := range dirs {
		want := ""
		if i == last {
			want = rubric.Num(f.Score)
		}
		assert.Equal(t, want, rows[i+1][col["final_score"]], names[i])
		assert.Equal(t, rubric.Num(docs[i].Score.Earned), rows[i+1][col["score_earned"]], "%s: the measured score is unchanged", names[i])
	}

	assertNoSandboxLeft(t, stateDir)
}
