package core

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// A target that fails its preflight grades nothing: every bundle is
// incomplete (exit 3) with the reason, the preflight has its own section,
// and the suite is never built.
func TestPreflightFailureMakesTheRunIncomplete(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"code":"BOOM","message":"broken server"}`))
	}))
	defer broken.Close()
	sess, err := Open(context.Background(), Config{
		Target: broken.URL, TargetKind: rubric.TargetReal, Seed: 1, SubjectTimeout: time.Minute, Wheels: t.TempDir(),
	}, func(ctx context.Context, _ map[string]string) (StartedTarget, error) {
		return StartedTarget{Target: Target{Kind: rubric.TargetReal, Domain: strings.TrimPrefix(broken.URL, "http://"), APIKey: "k"}}, nil
	})
	require.NoError(t, err)
	defer sess.Close()
	require.NotNil(t, sess.Preflight())
	assert.False(t, sess.Preflight().Passed)
	assert.Contains(t, sess.Preflight().Reason, "create")

	sub, err := submission.FromCommand("true")
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "bundle")
	g := sess.Grade(context.Background(), sub, out, func(SuiteInput) (Suite, error) {
		t.Fatal("the suite must not be built on a target that failed its preflight")
		return nil, nil
	}, nil)
	require.NoError(t, g.Err)
	assert.Equal(t, rubric.OverallIncomplete, g.Doc.Verdict)
	assert.Equal(t, rubric.ExitIncomplete, g.Doc.ExitCode)
	assert.Contains(t, g.Doc.VerdictReason, "the target failed its preflight")
	assert.Equal(t, 0.0, g.Doc.Score.Earned)
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "## Target preflight (not scored): FAILED")
	js, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	assert.Contains(t, string(js), `"preflight"`)
}
