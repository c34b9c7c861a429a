//go:build e2e

package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// TestGradeNothingEarnsNothing: an empty submission (a manifest whose
// pipeline does nothing) graded beside a broken one, and a bare
// `--subject true`, each earn 0 points; every entry is failed or not
// measured with a reason; the broken submission does not stop the other.
func TestGradeNothingEarnsNothing(t *testing.T) {
	requireSandboxes(t)
	gradingEnv(t)
	class := filepath.Join(t.TempDir(), "class")
	var stdout, stderr bytes.Buffer
	code := gradeMain(runArgs(t, class, "--concurrency", "2", testdataSubmission(t, "empty"), testdataSubmission(t, "broken")), &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	assert.Equal(t, rubric.ExitGradedFail, code)
	assert.Contains(t, stdout.String(), "not graded: ")
	requireNothingEarned(t, filepath.Join(class, "01-empty"))

	out := filepath.Join(t.TempDir(), "bundle")
	stdout.Reset()
	stderr.Reset()
	code = runMain(runArgs(t, out, "--subject", "true", "--concurrency", "2"), &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	assert.Equal(t, rubric.ExitGradedFail, code)
	b := requireNothingEarned(t, out)
	assert.Contains(t, b.row(t, "M0").Reason, "the submission declares no contract check")
	assert.Contains(t, b.row(t, "maintainability").Reason, "the submission declares no unit test command")
}
