//go:build e2e

package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStudentSubjectPassesM2M3: the good submission passes every M2
// scenario (except the 50 MB one) and every M3 scenario.
func TestStudentSubjectPassesM2M3(t *testing.T) {
	e := requireSubjectEnv(t)
	g := gradeStudent(t, e, "", "@milestone:M2&&~@large,@milestone:M3")

	assert.NotEqual(t, "not_passed", g.report.Verdict, "verdict reason: %s", g.report.VerdictReason)
	assert.NotEqual(t, 1, g.exit)
	for _, id := range []string{"M2", "M3", "function", "accuracy", "network", "credential", "observability"} {
		en := g.entry(t, id)
		assert.Equal(t, "passed", en.Verdict, "%s: %s %v", id, en.Reason, en.failedReasons())
	}
	// The Credential Vault path (SDK credential_vault.create + credentialProxy) was exercised.
	assert.Contains(t, g.entry(t, "credential").Reason, "the data API received the real token")
	for _, list := range [][]entryJSON{g.report.Criteria, g.report.Milestones, g.report.Drills} {
		for _, en := range list {
			assert.NotEqual(t, "failed", en.Verdict, "%s failed: %v", en.ID, en.failedReasons())
			assert.NotEqual(t, "harness_error", en.Verdict, "%s: %s", en.ID, en.Reason)
		}
	}
}

// TestStudentSubjectDrills: the good submission classifies a denied package
// index as network_policy after one attempt (D1), stops with sandbox_gone
// when its sandbox expires mid-run (D2), and treats injected text as data (D4).
func TestStudentSubjectDrills(t *testing.T) {
	e := requireSubjectEnv(t)
	g := gradeStudent(t, e, "", "@drill:D1,@drill:D2,@drill:D4")

	assert.NotEqual(t, "not_passed", g.report.Verdict, "verdict reason: %s", g.report.VerdictReason)
	for _, id := range []string{"D1", "D2", "D4", "injection"} {
		en := g.entry(t, id)
		assert.Equal(t, "passed", en.Verdict, "%s: %s %v", id, en.Reason, en.failedReasons())
	}
}

// TestStudentFlawWrongNumber: rows+1 and a wrong mean fail `accuracy`, with
// the claimed and the recomputed row count in the reason.
func TestStudentFlawWrongNumber(t *testing.T) {
	e := requireSubjectEnv(t)
	g := gradeStudent(t, e, "wrong-number", "@milestone:M2&&@criterion:accuracy&&~@large")
	g.requireNotPassed(t)

	// What the subject claimed, and the truth computed here with encoding/csv.
	run := filepath.Join(g.out, "evidence", "subject-sales")
	var sum struct {
		Metrics map[string]float64 `json:"metrics"`
	}
	b, err := os.ReadFile(filepath.Join(run, "out", "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sum))
	rows, meanRevenue := salesTruth(t, filepath.Join(run, "input", "sales.csv"))
	require.Equal(t, float64(rows+1), sum.Metrics["rows"], "the wrong-number flaw claims rows+1")

	g.requireFailedWith(t, "accuracy",
		"claimed rows "+strconv.Itoa(rows+1), "the harness counts "+strconv.Itoa(rows))

	// The flaw's mean (sum / line count) is wrong too, in summary.json and in
	// report.md. Every accuracy scenario checks the row count first, so the
	// harness stops there: the mean never reaches a reason of its own.
	assert.Greater(t, math.Abs(sum.Metrics["mean_revenue"]-meanRevenue), 1e-3,
		"the wrong-number flaw claims a wrong mean_revenue (claimed %v, true %v)", sum.Metrics["mean_revenue"], meanRevenue)
	report, err := os.ReadFile(filepath.Join(run, "out", "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(report), "| mean_revenue | "+strconv.FormatFloat(sum.Metrics["mean_revenue"], 'g', -1, 64)+" |")
}

// TestStudentFlawAllowAll: defaultAction allow fails `network`; security
// gates the verdict.
func TestStudentFlawAllowAll(t *testing.T) {
	e := requireSubjectEnv(t)
	g := gradeStudent(t, e, "allow-all", "@criterion:network&&@milestone:M3")
	g.requireSecurityGate(t, "network")
	g.requireFailedWith(t, "network", `defaultAction "allow"`)
	g.requireFailedWith(t, "M3")
}

// TestStudentFlawTokenInEnv: the real data API token in the sandbox's env
// is found by the server's canary scan; `credential` fails.
func TestStudentFlawTokenInEnv(t *testing.T) {
	e := requireSubjectEnv(t)
	g := gradeStudent(t, e, "token-in-env", "@criterion:credential&&@milestone:M3")
	g.requireSecurityGate(t, "credential")
	g.requireFailedWith(t, "credential", "planted secrets found inside the subject's sandbox", "data_api_token")
}

// TestStudentFlawLeakKey: the API key printed into report.md fails `credential`.
func TestStudentFlawLeakKey(t *testing.T) {
	e := requireSubjectEnv(t)
	g := gradeStudent(t, e, "leak-key", "@criterion:credential&&@milestone:M3")
	g.requireSecurityGate(t, "credential")
	g.requireFailedWith(t, "credential", "secrets leaked into the subject's outputs", "subject API key in", "report.md")
}

// TestStudentFlawRetryForever: an install retried 8 times under a denied
// package index fails D1's bounded-retry check.
func TestStudentFlawRetryForever(t *testing.T) {
	e := requireSubjectEnv(t)
	g := gradeStudent(t, e, "retry-forever", "@drill:D1")
	g.requireNotPassed(t)
	r := g.requireFailedWith(t, "D1", "install commands")
	m := regexp.MustCompile(`ran (\d+) install commands`).FindStringSubmatch(r)
	require.NotNil(t, m, r)
	n, _ := strconv.Atoi(m[1])
	assert.Greater(t, n, 3, "more attempts than the drill's bound")
}

// TestStudentFlawNoDestroy: a sandbox that is never deleted fails M2's
// "the sandbox was deleted and a later GET answers 404"; the bundled server
// still removes it when the run ends (gradeStudent checks no netns is left).
func TestStudentFlawNoDestroy(t *testing.T) {
	e := requireSubjectEnv(t)
	g := gradeStudent(t, e, "no-destroy", "@milestone:M2&&@criterion:accuracy&&@criterion:observability")
	g.requireNotPassed(t)
	g.requireFailedWith(t, "M2", "no successful DELETE")
}
