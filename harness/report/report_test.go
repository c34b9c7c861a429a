package report_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

func TestDocumentVerdictAndScore(t *testing.T) {
	t.Parallel()
	d := reporttest.FixtureDoc(t)
	assert.Equal(t, rubric.OverallNotPassed, d.Verdict)
	assert.Equal(t, rubric.ExitGradedFail, d.ExitCode)
	assert.Contains(t, d.VerdictReason, "security criterion failed: network")
	assert.Equal(t, "1", d.SchemaVersion)
	// One document entry per rubric entry: counts come from the course
	// (rubric.TestCourseRegistryShape pins the course's own numbers).
	assert.Len(t, d.Criteria, len(rubric.Course.OfKind(rubric.KindCriterion)))
	assert.Len(t, d.Milestones, len(rubric.Course.OfKind(rubric.KindMilestone)))
	assert.Len(t, d.Drills, len(rubric.Course.OfKind(rubric.KindDrill)))
	assert.Len(t, d.Scoring, len(rubric.Course.OfKind(rubric.KindScoring)))
}

// A run that panics midway still leaves a report with what was measured.
func TestPanicMidwayLeavesReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	meta := reporttest.FixtureMeta()
	meta.EndedAt = time.Time{}
	b, err := report.Open(dir, rubric.Course, meta, report.Options{Now: reporttest.FixedClock()})
	require.NoError(t, err)
	defer b.Close()

	run := func() {
		defer b.Recover()
		require.NoError(t, b.Results().Pass(rubric.M0, "m0", "contract ok"))
		ref, err := b.Evidence(rubric.M0).WriteText("transcript.txt", "> POST /v1/sandboxes\n< HTTP/1.1 202 Accepted\n")
		require.NoError(t, err)
		require.NoError(t, b.Results().Fail(rubric.Isolation, "m1", "GET after delete returned 200", ref))
		// The journal is on disk before anything is finalized.
		j, _, err := report.ReadJournal(filepath.Join(dir, report.JournalFile))
		require.NoError(t, err)
		require.Len(t, j, 2)
		panic("boom in step 3")
	}
	assert.PanicsWithValue(t, "boom in step 3", run)

	md, js, junit := reporttest.ReadAll(t, dir)
	assert.Contains(t, md, "**Run aborted:** "+render.Cell("panic: boom in step 3"))
	assert.Contains(t, md, "| **M0** M0 · Contract verification | passed | contract ok |")
	assert.Contains(t, md, "["+render.Cell("transcript.txt")+"](evidence/M0/transcript.txt)")
	assert.Contains(t, junit, "GET after delete returned 200")
	var doc report.Document
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	assert.Equal(t, "panic: boom in step 3", doc.Aborted)
	assert.Equal(t, rubric.OverallNotPassed, doc.Verdict)
	assert.Equal(t, rubric.Passed, reporttest.EntryRow(doc, rubric.M0).Verdict)
	assert.False(t, doc.EndedAt.IsZero())
}

// A process killed before Finalize: RenderDir rebuilds from the journal,
// skipping a torn last line.
func TestRenderDirAfterKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	meta := reporttest.FixtureMeta()
	meta.EndedAt = time.Time{}
	b, err := report.Open(dir, rubric.Course, meta, report.Options{Now: reporttest.FixedClock()})
	require.NoError(t, err)
	require.NoError(t, b.Results().Pass(rubric.Function, "m2", "outputs produced"))
	require.NoError(t, b.Close())
	f, err := os.OpenFile(filepath.Join(dir, report.JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = f.WriteString(`{"seq":2,"id":"network","verd`)
	require.NoError(t, f.Close())

	doc, err := report.RenderDir(dir, rubric.Course, report.Options{Now: reporttest.FixedClock()})
	require.NoError(t, err)
	assert.Equal(t, 1, doc.JournalSkipped)
	assert.Equal(t, rubric.Passed, reporttest.EntryRow(doc, rubric.Function).Verdict)
	assert.Contains(t, doc.Aborted, "without finalizing")
	assert.NotEqual(t, rubric.OverallPassed, doc.Verdict)
	assert.Equal(t, rubric.ExitHarnessError, doc.ExitCode)
	md, _, _ := reporttest.ReadAll(t, dir)
	assert.Contains(t, md, "1 torn journal line")
}

func TestAbortedRunNeverPasses(t *testing.T) {
	t.Parallel()
	r := rubric.NewResults(rubric.Course)
	for _, e := range rubric.Course.Graded() {
		if e.MeasurableOn(rubric.TargetMock) {
			require.NoError(t, r.Pass(e.ID, "s", "ok"))
		}
	}
	m := reporttest.FixtureMeta()
	d, _ := report.Build(rubric.Course, m, r.Outcomes(), nil)
	assert.Equal(t, rubric.OverallPassed, d.Verdict)
	assert.Equal(t, 0, d.ExitCode)
	m.Aborted = "signal: interrupt"
	d, _ = report.Build(rubric.Course, m, r.Outcomes(), nil)
	assert.Equal(t, rubric.OverallIncomplete, d.Verdict)
	assert.Equal(t, rubric.ExitHarnessError, d.ExitCode)
	assert.Equal(t, "verdict: incomplete, score 92.5 of 92.5 measured (measured 92.5 of 100), exit code 2", report.SummaryLine(d))
}

func TestReproduce(t *testing.T) {
	t.Parallel()
	e, _ := rubric.Course.Get(rubric.Network)
	m := reporttest.FixtureMeta()
	assert.Equal(t, `acceptance run --target mock --subject 'python3 agent.py --csv {csv} --out {out}' --seed 42 --tags @criterion:network`, report.Reproduce(m, e))
	m.Target, m.TargetKind, m.Subject = "http://127.0.0.1:8080", rubric.TargetReal, "it's"
	assert.Equal(t, `acceptance run --target http://127.0.0.1:8080 --api-key "$OPEN_SANDBOX_API_KEY" --subject 'it'\''s' --seed 42 --tags @criterion:network`, report.Reproduce(m, e))
	// --target docker makes its own key: --api-key there is a usage error.
	m.Target = "docker"
	assert.Equal(t, `acceptance run --target docker --subject 'it'\''s' --seed 42 --tags @criterion:network`, report.Reproduce(m, e))
	// A submission graded from its directory is graded again from that
	// directory: its display name "name (/path)" is no command on PATH.
	m = reporttest.FixtureMeta()
	m.Subject, m.SubmissionDir = "alice (/srv/class/alice smith)", "/srv/class/alice smith"
	assert.Equal(t, `acceptance grade --target mock --seed 42 --tags @criterion:network '/srv/class/alice smith'`, report.Reproduce(m, e))
	// The bundled reference is run as itself.
	m.Subject, m.SubmissionDir, m.Builtin = "reference (/repo/fixtures/submissions/reference)", "", true
	assert.Equal(t, `acceptance run --target mock --subject reference --seed 42 --tags @criterion:network`, report.Reproduce(m, e))
}
