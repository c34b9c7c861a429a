package upgradecheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/osb-capstone/acceptance/harness/report/compare"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// TestJudgeFiguresAgainstNoise: a latency rise counts only beyond the spread
// seen within each version; one run per side judges nothing.
func TestJudgeFiguresAgainstNoise(t *testing.T) {
	o := compare.DefaultOptions
	from := []map[string]float64{{"a/create_ms": 1000, "a/noisy_ms": 1000, "a/faster_ms": 4000}, {"a/create_ms": 1100, "a/noisy_ms": 2500, "a/faster_ms": 4100}}
	to := []map[string]float64{{"a/create_ms": 2400, "a/noisy_ms": 2600, "a/faster_ms": 1000}, {"a/create_ms": 2500, "a/noisy_ms": 1200, "a/faster_ms": 1100}}
	got := map[string]FigureJudgement{}
	for _, f := range JudgeFigures(from, to, o) {
		got[f.Name] = f
	}
	c := got["a/create_ms"]
	assert.True(t, c.Judged)
	assert.True(t, c.Regression, "1050 → 2450 ms with spreads of 100 ms is a regression")
	assert.Equal(t, 1050.0, c.FromMedian)
	assert.Equal(t, 100.0, c.FromSpread)
	n := got["a/noisy_ms"]
	assert.False(t, n.Regression, "a +150 ms median move inside a 1500 ms spread is noise")
	assert.True(t, n.WithinTheNoise)
	assert.True(t, got["a/faster_ms"].Improvement)

	one := JudgeFigures(from[:1], to[:1], o)
	for _, f := range one {
		assert.False(t, f.Judged || f.Regression || f.WithinTheNoise, "one run per side judges no timing: %+v", f)
	}
	// A figure missing from one run is not compared.
	part := JudgeFigures([]map[string]float64{{"x_ms": 1, "y_ms": 2}, {"x_ms": 1}}, []map[string]float64{{"x_ms": 1, "y_ms": 2}, {"x_ms": 1}}, o)
	assert.Len(t, part, 1)
}

func TestUpgradeResultNoRunsIsIncomplete(t *testing.T) {
	r := upgradeResult{From: "1.1.0", To: "1.1.1", Runs: []upgradeRun{
		{Version: "1.1.0", Round: 1, Dir: t.TempDir(), Exit: 2, Failure: "the server package failed to import (a fault of the target, not of the submission): ModuleNotFoundError"},
	}}
	r.judge(compare.DefaultOptions)
	assert.Equal(t, 2, r.Exit)
	assert.Contains(t, r.markdown(), "the server package failed to import")
	assert.Contains(t, r.markdown(), "never the subject's")
}

// TestUpgradeVerdictsJudgedAcrossRounds: an entry that failed in one round
// of the new version and passed in the other is unstable, not a regression;
// one that failed in every round of the new version (and passed in every
// round of the old) is a regression.
func TestUpgradeVerdictsJudgedAcrossRounds(t *testing.T) {
	bundle := func(m2, m1 rubric.Verdict) string {
		dir := t.TempDir()
		doc := map[string]any{"schema_version": report.SchemaVersion, "verdict": "passed", "score": map[string]any{"earned": 10, "measured": 10},
			"criteria": []any{}, "drills": []any{},
			"milestones": []any{map[string]any{"id": "M2", "verdict": m2}, map[string]any{"id": "M1", "verdict": m1}}}
		b, _ := json.Marshal(doc)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644))
		return dir
	}
	from := []string{bundle(rubric.Passed, rubric.Passed), bundle(rubric.Passed, rubric.Passed)}
	to := []string{bundle(rubric.Failed, rubric.Failed), bundle(rubric.Passed, rubric.Failed)}
	regs := verdictRegressions(from, to)
	assert.Equal(t, []string{"M1 worse in every run of the new version"}, regs, "M2 failed once and passed once: unstable, not a regression")
	assert.Equal(t, []string{"M2 on 9.9.9: failed / passed"}, unstableEntries(to, "9.9.9"))
}
