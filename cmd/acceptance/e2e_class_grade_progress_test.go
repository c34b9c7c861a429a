//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
)

// TestGradeOnATerminal grades three calibration submissions (reference,
// bad-empty, bad-lying-contract; M0 and maintainability only, as
// TestGradeClassOf20) with the output on a pseudo-terminal, as a course
// lead would: the terminal shows a status line redrawn in place (done/total,
// running, elapsed, verdicts so far) and one line per submission as it
// finishes, never the per-scenario lines, which are in each bundle's
// progress.log. Then the class page those real bundles produced is opened in
// headless Chromium and checked against them (reporttest.CheckClassPage);
// screenshots at reports/html-test/class-graded*.png.
func TestGradeOnATerminal(t *testing.T) {
	e := requireSubjectEnv(t)
	gradingEnv(t)
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	master, tty, err := pty.Open()
	require.NoError(t, err)
	defer master.Close()
	require.NoError(t, pty.Setsize(tty, &pty.Winsize{Rows: 50, Cols: 250}))
	read := readPTY(t, master)

	subs := filepath.Join(e.root, "fixtures", "submissions")
	names := []string{"reference", "bad-empty", "bad-lying-contract"}
	var dirs []string
	for _, n := range names {
		dirs = append(dirs, filepath.Join(subs, n))
	}
	class := filepath.Join(t.TempDir(), "class")
	var stderr bytes.Buffer
	code := dispatch(append([]string{"grade", "--out", class, "--state-dir", t.TempDir(), "--wheels", e.wheels,
		"--baselines", t.TempDir(), "--parallel", "2", "--tags", "@milestone:M0,@criterion:maintainability"}, dirs...), tty, &stderr)
	tty.Close()
	out := read()
	t.Logf("acceptance grade on a terminal: exit %d\n%q\n%s", code, out, stderr.String())
	require.NotEqual(t, 2, code, "graded, not a usage error")

	assert.Regexp(t, regexp.MustCompile(`\r\x1b\[K0/3 done · \S+ elapsed · estimating the time left · passed 0 · not passed 0 · incomplete 0 · running \d: `), out)
	assert.Regexp(t, regexp.MustCompile(`\r\x1b\[K1/3 done · \S+ elapsed · about \S+ left · `), out)
	assert.Contains(t, out, "3/3 done")
	var bundles []string
	for i, n := range names {
		matches, err := filepath.Glob(filepath.Join(class, fmt.Sprintf("%02d-*", i+1)))
		require.NoError(t, err)
		require.Len(t, matches, 1, n)
		bundles = append(bundles, matches[0])
		d, err := report.ReadDocument(matches[0])
		require.NoError(t, err)
		// A submission is labelled by its bundle: position and directory.
		assert.Regexp(t, regexp.MustCompile(`\[\d/3\] `+regexp.QuoteMeta(filepath.Base(matches[0])+" "+report.SummaryLine(d))), out, "%s's line as it finished", n)
		log, err := os.ReadFile(filepath.Join(matches[0], ProgressLogFile))
		require.NoError(t, err, "%s's per-scenario lines", n)
		assert.Equal(t, countScenarios("@milestone:M0,@criterion:maintainability"), scenarioLines(string(log)), "%s: one line per scenario in progress.log:\n%s", n, log)
	}
	assert.NotContains(t, out, "running the submission's", "per-scenario lines stay off the terminal without --verbose")

	bin := reporttest.FindChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ids := reporttest.CheckClassPage(ctx, t, bin, class, bundles, filepath.Join(e.root, "reports", "html-test"), "class-graded")
	t.Logf("most-failed entries: %s", strings.Join(ids, ", "))
	assert.Contains(t, ids, "M0", "bad-empty and bad-lying-contract fail M0")
}

// TestRunOnATerminal: `acceptance run` on a pseudo-terminal keeps its
// per-scenario lines and keeps a status line below them counting the
// scenarios its tags select.
func TestRunOnATerminal(t *testing.T) {
	requireSandboxes(t)
	gradingEnv(t)
	master, tty, err := pty.Open()
	require.NoError(t, err)
	defer master.Close()
	require.NoError(t, pty.Setsize(tty, &pty.Winsize{Rows: 50, Cols: 250}))
	read := readPTY(t, master)
	var stderr bytes.Buffer
	tags := "@milestone:M0"
	code := runMain([]string{"--out", filepath.Join(t.TempDir(), "bundle"), "--state-dir", t.TempDir(), "--baselines", t.TempDir(),
		"--wheels", filepath.Join(repoRoot(t), ".cache", "wheels"), "--subject", "true", "--tags", tags}, tty, &stderr)
	tty.Close()
	out := read()
	t.Logf("acceptance run on a terminal: exit %d\n%q\n%s", code, out, stderr.String())
	require.NotEqual(t, 2, code)
	n := countScenarios(tags)
	require.Greater(t, n, 0)
	assert.Contains(t, out, fmt.Sprintf("\r\x1b[K0/%d scenarios done · ", n))
	assert.Contains(t, out, fmt.Sprintf("\r\x1b[K%d/%d scenarios done · ", n, n))
	assert.Regexp(t, regexp.MustCompile(`(?m)(?:^|\x1b\[K)(failed|not_measured|passed) +\S`), out, "the per-scenario lines are still printed")
}
