//go:build e2e

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// TestGradeModelSubmissionTests grades, on M4 maintainability only (no
// subject run), a model: true submission whose unit and integration tests
// each need the model: both get a loopback endpoint, complete a chat
// request, and the request is recorded in each command's evidence. Its
// integration test talks to the model only and touches no sandbox, so
// maintainability fails for exactly that (an integration test creates,
// uses and destroys a sandbox), never for a missing model endpoint.
func TestGradeModelSubmissionTests(t *testing.T) {
	e := requireSubjectEnv(t)
	gradingEnv(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the submission's test cannot make its request")
	}
	dir := filepath.Join(t.TempDir(), "model-tests")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755))
	}
	write("tests.sh", modelTestsScript)
	write("agent.sh", "#!/bin/sh\nexit 1\n")
	write("capstone.yaml", `run: "sh agent.sh {out}"
test:
  unit: "sh tests.sh unit"
  integration: "sh tests.sh integration"
model: true
`)
	write("README.md", "# model tests\n\nRun: `sh agent.sh OUT`. Tests: `sh tests.sh unit`, `sh tests.sh integration`.\n")

	class := filepath.Join(t.TempDir(), "class")
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"grade", "--out", class, "--state-dir", shortStateDir(t), "--wheels", e.wheels,
		"--baselines", t.TempDir(), "--parallel", "1", "--tags", "@milestone:M4&&@criterion:maintainability", dir}, &stdout, &stderr)
	t.Logf("acceptance grade: exit %d\n%s%s", code, stdout.String(), stderr.String())
	matches, err := filepath.Glob(filepath.Join(class, "01-*"))
	require.NoError(t, err)
	require.Len(t, matches, 1)
	b := readBundle(t, matches[0])
	r := b.row(t, string(rubric.Maintainability))
	assert.Equal(t, rubric.Failed, r.Verdict, r.Reason)
	assert.Contains(t, r.Reason, "create no sandbox", "the one failure: the integration test touched no sandbox")
	assert.NotContains(t, r.Reason, "test.unit", "the unit test passed with its model endpoint")
	assert.NotContains(t, r.Reason, "no loopback model endpoint")
	for _, field := range []string{"test.unit", "test.integration"} {
		tr, err := os.ReadFile(filepath.Join(matches[0], "evidence", "subject-"+field, "model-transcript.jsonl"))
		require.NoError(t, err, field)
		assert.Contains(t, string(tr), "ping from the tests", field)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(string(tr)), "\n")+1, "%s: one request", field)
		stdoutLog, _ := os.ReadFile(filepath.Join(matches[0], "evidence", "subject-"+field, "stdout.log"))
		assert.Contains(t, string(stdoutLog), "1 passed, 0 failed", field)
	}
}
