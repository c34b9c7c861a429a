//go:build e2e

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/cmd/acceptance/reference"
	"github.com/osb-capstone/acceptance/harness/summary"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
)

// TestReferenceIndexUnreachableOnBundledServer: the reference pipeline on a
// target whose package index has no upstream (the bundled server started
// without the stub index: pypi.org is allowed, but its gateway fails closed)
// goes on without tabulate: exit 0, the install step kept with its real exit
// code and stderr, and summary.json's degraded list says why it was skipped.
func TestReferenceIndexUnreachableOnBundledServer(t *testing.T) {
	requireSandboxes(t)
	key := "offline-" + randomHex(8)
	state := shortStateDir(t)
	srv, err := mockserver.StartBundled(context.Background(), mockserver.BundledConfig{APIKey: key, StateDir: state})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })

	cfg := reference.DefaultConfig()
	cfg.CSV = filepath.Join(repoRoot(t), "fixtures", "sales.csv")
	cfg.Question = "What is the total revenue by category?"
	cfg.Out = filepath.Join(t.TempDir(), "out")
	cfg.Domain, cfg.APIKey = srv.Server.Domain(), key
	res := reference.Run(context.Background(), cfg)
	s := res.Summary
	require.Equal(t, 0, res.ExitCode, "%+v", s.Error)
	assert.Equal(t, reference.StopCompleted, s.StopReason)
	require.Len(t, s.Degraded, 1, "the skipped install is recorded")
	assert.Equal(t, "install", s.Degraded[0].Step)
	assert.Contains(t, s.Degraded[0].Reason, "install skipped")
	assert.Contains(t, s.Degraded[0].Reason, "never answered")
	require.NotEmpty(t, s.Steps)
	assert.Equal(t, "install", s.Steps[0].Name)
	require.NotNil(t, s.Steps[0].ExitCode)
	assert.NotEqual(t, 0, *s.Steps[0].ExitCode, "the install step keeps its real (failed) exit code")
	assert.Equal(t, 1, len(res.Evidence.Install), "one attempt: a missing upstream is not retried")
	for _, f := range []string{"report.md", "chart.png", "summary.json"} {
		_, err := os.Stat(filepath.Join(cfg.Out, f))
		assert.NoError(t, err, f)
	}
	b, err := os.ReadFile(filepath.Join(cfg.Out, "summary.json"))
	require.NoError(t, err)
	problems, err := summary.Validate(b)
	require.NoError(t, err)
	assert.Empty(t, problems)
	requireNoLeaks(t, []string{s.SandboxID}, state)
}
