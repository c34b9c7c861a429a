package compare

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report"
	_ "github.com/osb-capstone/acceptance/harness/report/render" // RenderDir writes the outputs
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Two runs of the same thing (the reference, M0+M5, seed 1, one after the
// other, on this shared and loaded 2-core machine): no regression, no verdict
// change, no evidence drift. (A third run made under a different load took
// 3× as long, and the diff rightly flags that.)
func TestCompareQuietOnSameThing(t *testing.T) {
	t.Parallel()
	c, err := Compare("../testdata/bundles/m0m5-c", "../testdata/bundles/m0m5-d", DefaultOptions)
	require.NoError(t, err)
	var out bytes.Buffer
	Write(&out, c, DefaultOptions)
	assert.False(t, c.Regressed(), out.String())
	assert.Empty(t, c.Entries, out.String())
	for _, f := range c.Figures {
		assert.False(t, f.Regression, "%s moved up beyond the threshold", f.Name)
	}
	assert.Empty(t, c.Drift, out.String())
	assert.Greater(t, c.FiguresCompared, 10, "figures were compared, not skipped")
	assert.Contains(t, out.String(), "no regression")
}

func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(mustRead(t, path), &m))
	edit(m)
	b, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// A planted verdict change: M0 failed in the new bundle.
func TestCompareFlagsVerdictChange(t *testing.T) {
	t.Parallel()
	newDir := reporttest.CopyBundle(t, "../testdata/bundles/m0m5-d")
	f, err := os.OpenFile(filepath.Join(newDir, report.JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"seq":7,"time":"2026-11-30T15:09:00Z","id":"M0","verdict":"failed","reason":"create answered 200, not 202","scenario":"contract"}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = report.RenderDir(newDir, rubric.Course, report.Options{})
	require.NoError(t, err)

	c, err := Compare("../testdata/bundles/m0m5-c", newDir, DefaultOptions)
	require.NoError(t, err)
	require.True(t, c.Regressed())
	require.Len(t, c.Entries, 1)
	assert.Equal(t, EntryChange{ID: rubric.M0, Old: rubric.Passed, New: rubric.Failed, NewReason: "create answered 200, not 202", Regression: true}, c.Entries[0])
	assert.Equal(t, rubric.OverallNotPassed, c.NewVerdict)
	var out bytes.Buffer
	Write(&out, c, DefaultOptions)
	assert.Contains(t, out.String(), "! M0              passed → failed")
	// The new score is the course's (its weights: 9 with today's), re-rendered from the journal.
	nd, err := report.ReadDocument(newDir)
	require.NoError(t, err)
	assert.Less(t, nd.Score.Earned, 14.0)
	assert.Contains(t, out.String(), "REGRESSION: verdict incomplete → not_passed; score 14 → "+rubric.Num(nd.Score.Earned)+"; M0 passed → failed")
}

// A planted latency regression: the analyze step took 3× as long.
func TestCompareFlagsLatencyRegression(t *testing.T) {
	t.Parallel()
	newDir := reporttest.CopyBundle(t, "../testdata/bundles/m0m5-d")
	audit := filepath.Join(newDir, "evidence", "subject-sales", "audit.json")
	var evs []map[string]any
	require.NoError(t, json.Unmarshal(mustRead(t, audit), &evs))
	for _, ev := range evs {
		if c, ok := ev["command"].(map[string]any); ok && strings.Contains(c["command"].(string), "analyze.py") {
			c["duration_ms"] = c["duration_ms"].(float64) * 3
		}
	}
	b, _ := json.Marshal(evs)
	require.NoError(t, os.WriteFile(audit, b, 0o644))

	c, err := Compare("../testdata/bundles/m0m5-c", newDir, DefaultOptions)
	require.NoError(t, err)
	require.True(t, c.Regressed())
	var names []string
	for _, f := range c.Figures {
		names = append(names, f.Name)
		assert.True(t, f.Regression)
	}
	assert.Contains(t, names, "sales/step_analyze_ms")
	assert.Empty(t, c.Entries, "no verdict changed")
	var out bytes.Buffer
	Write(&out, c, DefaultOptions)
	assert.Contains(t, out.String(), "regressed)")
	// A looser threshold lets it through.
	c, err = Compare("../testdata/bundles/m0m5-c", newDir, Options{Threshold: 5, FloorMs: 250, FloorBytes: 1 << 16})
	require.NoError(t, err)
	assert.False(t, c.Regressed())
}

func TestCompareMissingBundle(t *testing.T) {
	t.Parallel()
	_, err := Compare(t.TempDir(), "../testdata/bundles/m0m5-a", DefaultOptions)
	assert.ErrorContains(t, err, "old bundle")
}

// A planted intermittent entry: M0's scenario failed in a second repetition
// (--repeat 2), so M0 is flaky in the new bundle. passed → flaky is a
// regression, and flaky → failed is one too.
func TestCompareFlagsFlaky(t *testing.T) {
	t.Parallel()
	newDir := reporttest.CopyBundle(t, "../testdata/bundles/m0m5-d")
	outs, _, err := report.ReadJournal(filepath.Join(newDir, report.JournalFile))
	require.NoError(t, err)
	var scenario string
	for _, o := range outs {
		if o.ID == rubric.M0 {
			scenario = o.Scenario
		}
	}
	require.NotEmpty(t, scenario)
	j, err := report.OpenJournal(filepath.Join(newDir, report.JournalFile))
	require.NoError(t, err)
	res := rubric.NewResults(rubric.Course, j)
	require.NoError(t, res.Fail(rubric.M0, scenario, "create answered 200, not 202"))
	require.NoError(t, res.Flaky(rubric.M0, scenario, 1, 2))
	require.NoError(t, j.Close())
	// Sequence numbers restart in the second collector; the journal keeps order.
	doc, err := report.RenderDir(newDir, rubric.Course, report.Options{})
	require.NoError(t, err)
	require.Equal(t, rubric.Flaky, doc.Milestones[0].Verdict, doc.Milestones[0].Reason)
	assert.Contains(t, doc.Milestones[0].Reason, "flaky: passed 1 of 2 repetitions")

	c, err := Compare("../testdata/bundles/m0m5-c", newDir, DefaultOptions)
	require.NoError(t, err)
	require.True(t, c.Regressed())
	require.Len(t, c.Entries, 1)
	assert.Equal(t, rubric.M0, c.Entries[0].ID)
	assert.Equal(t, rubric.Flaky, c.Entries[0].New)
	assert.True(t, c.Entries[0].Regression, "passed → flaky is a regression")
	var out bytes.Buffer
	Write(&out, c, DefaultOptions)
	assert.Contains(t, out.String(), "M0 passed → flaky")

	assert.Less(t, EntryRank(rubric.Failed), EntryRank(rubric.Flaky), "flaky → failed is a regression")
	assert.Less(t, EntryRank(rubric.Flaky), EntryRank(rubric.Passed))
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// withRubric copies a bundle and records rubric hash h in its report.json
// ("" records none).
func withRubric(t *testing.T, src, h string) string {
	t.Helper()
	dir := reporttest.CopyBundle(t, src)
	editJSON(t, filepath.Join(dir, "report.json"), func(m map[string]any) {
		v, _ := m["versions"].(map[string]any)
		if v == nil {
			v = map[string]any{}
		}
		if h == "" {
			delete(v, "rubric")
		} else {
			v["rubric"] = h
		}
		m["versions"] = v
	})
	return dir
}

// Bundles graded under different rubrics are refused, as a class merge
// refuses them: by default with an error naming both hashes (a bundle that
// records none differs from one that does); with AcrossRubrics compared, and
// the output says so before anything else.
func TestCompareRefusesDifferentRubrics(t *testing.T) {
	t.Parallel()
	same := rubric.Course.Hash()
	oldDir := withRubric(t, "../testdata/bundles/m0m5-c", same)
	for _, other := range []string{"0123456789ab", ""} {
		newDir := withRubric(t, "../testdata/bundles/m0m5-d", other)
		_, err := Compare(oldDir, newDir, DefaultOptions)
		var m *RubricMismatch
		require.ErrorAs(t, err, &m, "rubric %q", other)
		assert.Equal(t, same, m.Old)
		assert.Contains(t, err.Error(), same)
		if other == "" {
			assert.Equal(t, "(none recorded)", m.New)
		} else {
			assert.Contains(t, err.Error(), other)
		}

		o := DefaultOptions
		o.AcrossRubrics = true
		c, err := Compare(oldDir, newDir, o)
		require.NoError(t, err)
		require.NotNil(t, c.RubricChange)
		var out bytes.Buffer
		Write(&out, c, o)
		first, _, _ := strings.Cut(out.String(), "\n")
		assert.Contains(t, first, "NOT COMPARABLE")
		assert.Contains(t, first, "different rubrics")
	}

	// The same rubric compares quietly, and nothing is marked.
	c, err := Compare(oldDir, withRubric(t, "../testdata/bundles/m0m5-d", same), DefaultOptions)
	require.NoError(t, err)
	assert.Nil(t, c.RubricChange)
	var out bytes.Buffer
	Write(&out, c, DefaultOptions)
	assert.NotContains(t, out.String(), "NOT COMPARABLE")
	assert.False(t, c.Regressed(), out.String())
}

// What `acceptance diff` prints quotes reasons, figure names and evidence
// inertly: a reason a submission wrote can clear no screen and forge no line.
func TestWriteIsInert(t *testing.T) {
	const hostile = "x\x1b]52;c;ZXZpbA==\x07\x1b[2J\nno regression"
	c := Comparison{Old: "old\x1b[2J", New: "new",
		Entries:     []EntryChange{{ID: "M1", Old: rubric.Passed, New: rubric.Failed, NewReason: hostile, Regression: true}},
		Figures:     []FigureChange{{Name: "subject\x1b[31m run", Old: 1, New: 2, Unit: "ms", Regression: true}},
		Drift:       []EvidenceDrift{{ID: "M2", Diff: "-a\n+x\x1b]52;c;ZXZpbA==\x07\x1b[2J"}}, // a line diff: one line a line
		Regressions: []string{hostile},
	}
	var buf bytes.Buffer
	Write(&buf, c, Options{Threshold: 0.25})
	for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		assert.True(t, inert.Clean(l), "a raw control character in %q", l)
		assert.NotEqual(t, "no regression", strings.TrimSpace(l), "a forged line: %s", buf.String())
	}
}
