//go:build e2e

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/shlex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// TestReproduceLineRuns: an entry's reproduce line in a graded bundle grades
// the same submission directory again (naming the display name
// "name (/path)" as a command would exit 2). The line is run as
// written, with only the bundle's own --out (and the test's wheels) added.
func TestReproduceLineRuns(t *testing.T) {
	requireSandboxes(t)
	gradingEnv(t)
	sub := testdataSubmission(t, "empty")
	out := filepath.Join(t.TempDir(), "first")
	var stdout, stderr bytes.Buffer
	code := gradeMain(runArgs(t, out, "--tags", "@criterion:function", sub), &stdout, &stderr)
	t.Logf("grade: exit %d\n%s%s", code, stdout.String(), stderr.String())
	require.NotEqual(t, rubric.ExitHarnessError, code)
	first := readBundle(t, filepath.Join(out, "01-empty")).row(t, "function")

	line := first.Reproduce
	t.Logf("reproduce: %s", line)
	args, err := shlex.Split(line)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(args), 3)
	assert.Equal(t, []string{"acceptance", "grade"}, args[:2])
	abs, _ := filepath.Abs(sub)
	assert.Equal(t, abs, args[len(args)-1], "it names the submission directory")
	assert.Contains(t, line, "--tags @criterion:function")

	again := filepath.Join(t.TempDir(), "again")
	stdout.Reset()
	stderr.Reset()
	code2 := dispatch(append([]string{args[1]}, runArgs(t, again, args[2:]...)...), &stdout, &stderr)
	t.Logf("reproduced: exit %d\n%s%s", code2, stdout.String(), stderr.String())
	assert.Equal(t, code, code2, "the reproduce line grades the same way")
	assert.NotContains(t, stderr.String(), "not found on PATH")
	second := readBundle(t, filepath.Join(again, "01-empty")).row(t, "function")
	assert.Equal(t, first.Verdict, second.Verdict)
	assert.True(t, strings.HasPrefix(second.Reproduce, "acceptance grade "), second.Reproduce)
}
