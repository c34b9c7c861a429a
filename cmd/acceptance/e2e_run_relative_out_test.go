//go:build e2e

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// `make acceptance` runs with the default --out, a relative path
// (reports/<run-id>), while each subject runs in its own working directory:
// the subject must still find {csv} and write {out}.
func TestRunWithRelativeOut(t *testing.T) {
	requireSandboxes(t)
	gradingEnv(t)
	args := runArgs(t, "", "--tags", "@milestone:M2&&@criterion:function&&~@large", "--state-dir", shortStateDir(t))
	args = args[2:] // drop "--out ''": the default is what is tested
	t.Chdir(t.TempDir())

	var stdout, stderr bytes.Buffer
	code := runMain(args, &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())

	latest, err := filepath.EvalSymlinks(filepath.Join("reports", "latest"))
	require.NoError(t, err, "reports/latest points at the bundle")
	b := readBundle(t, latest)
	assert.Equal(t, rubric.Passed, b.row(t, "function").Verdict, b.row(t, "function").Reason)
	assert.Equal(t, rubric.ExitIncomplete, code, "a tag-filtered run is incomplete, not failed")
	_, err = os.Stat(filepath.Join(latest, "evidence", "subject-sales", "out", "summary.json"))
	assert.NoError(t, err, "the subject wrote its outputs into the bundle")
}
