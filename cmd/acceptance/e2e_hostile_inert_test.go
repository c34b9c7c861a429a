//go:build e2e

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report/reporttest"
)

// forgingRun writes what the issue-26 attacker wrote: terminal escapes (clear
// screen, window title, an OSC 52 clipboard write) and lines the grader never
// wrote, to its stderr, then fails.
const forgingRun = `printf '\033[2J\033[H\033]0;owned\007\033]52;c;Y3VybCB8IHNo\007\n' >&2
printf 'passed        Instructions inside the data are treated as data  [D4, injection]\n' >&2
printf '[2/2] reference verdict: PASSED, score 100 of 100\r\nclass summary: all 2 passed\n' >&2
exit 1
`

// TestGradeConsoleAndProgressLogInert grades, in one call with --verbose, a
// submission whose manifest calls itself "reference" and whose run writes
// escapes and forged verdict lines to its stderr, beside one whose manifest
// has unknown keys full of escapes. The grader's console and the bundle's
// progress.log hold no raw control character and no line the grader did not
// write, and the submission is labelled by its directory.
func TestGradeConsoleAndProgressLogInert(t *testing.T) {
	requireSandboxes(t)
	gradingEnv(t)
	subs := t.TempDir()
	mallory := filepath.Join(subs, "mallory")
	keys := filepath.Join(subs, "keys")
	require.NoError(t, os.MkdirAll(mallory, 0o755))
	require.NoError(t, os.MkdirAll(keys, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mallory, "capstone.yaml"), []byte("name: reference\nrun: \"sh run.sh --out {out}\"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mallory, "run.sh"), []byte(forgingRun), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(keys, "capstone.yaml"),
		[]byte("run: \"true\"\n\"\\e[2J\\e]0;owned\\a\\nclass summary: all 2 passed\": 1\n"), 0o644))

	class := filepath.Join(t.TempDir(), "class")
	var stdout, stderr bytes.Buffer
	code := gradeMain(runArgs(t, class, "--tags", "@criterion:function", "--verbose", "--parallel", "1", mallory, keys), &stdout, &stderr)
	console := stdout.String() + stderr.String()
	t.Logf("exit %d\n%s", code, console)

	log := string(reporttest.MustRead(t, filepath.Join(class, "01-mallory", ProgressLogFile)))
	for name, text := range map[string]string{"console": console, "progress.log": log} {
		assert.Equal(t, rune(-1), reporttest.RawControl(text), "%s: a raw control character", name)
		for _, l := range strings.Split(text, "\n") {
			l = strings.TrimPrefix(l, "01-mallory: ")
			assert.False(t, strings.HasPrefix(l, "passed        Instructions"), "%s: a line the grader never wrote: %q", name, l)
			assert.False(t, strings.HasPrefix(l, "class summary: all"), "%s: a line the grader never wrote: %q", name, l)
			assert.False(t, strings.HasPrefix(l, "[2/2] reference"), "%s: a line the grader never wrote: %q", name, l)
		}
	}
	assert.Contains(t, console, `grading 01-mallory (its manifest's name: "reference")`)
	assert.Contains(t, console, `\x07\npassed        Instructions inside the data`, "shown, escaped, inside the quoted stderr")
	assert.Contains(t, console, `\x1b]52;c;Y3VybCB8IHNo\x07`)
	assert.Contains(t, log, `(stderr: "`, "the stderr excerpt is a visible quote")
	assert.DirExists(t, filepath.Join(class, "01-mallory"))
}
