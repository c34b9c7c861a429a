package report

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

func fixedClock() func() time.Time {
	n := 0
	return func() time.Time {
		n++
		return t0.Add(time.Duration(n) * time.Second)
	}
}

func fixtureMeta() Meta {
	return Meta{
		RunID: "run-20261129-080000", Target: "mock", TargetKind: rubric.TargetMock,
		Subject: "python3 agent.py --csv {csv} --out {out}", Seed: 42,
		Versions:  map[string]string{"harness": "dev", "server": "mock 1.1.1"},
		StartedAt: t0, EndedAt: t0.Add(3 * time.Minute),
	}
}

// fixtureOutcomes covers every verdict and category.
func fixtureOutcomes(t *testing.T) []rubric.Outcome {
	r := rubric.NewResults(rubric.Course)
	r.SetClock(fixedClock())
	must := func(err error) { require.NoError(t, err) }
	must(r.Pass(rubric.Function, "m2: report and chart", "report.md, chart.png (640x480 PNG) and summary.json produced, exit 0",
		"evidence/function/outputs.txt"))
	must(r.Pass(rubric.Accuracy, "m2: recompute", "rows 1000 = 1000; mean_price 12.5 = 12.5 (tol 1e-9)", "evidence/accuracy/recompute.json"))
	must(r.Pass(rubric.Isolation, "m1: destroy", "GET after delete: 404"))
	must(r.Fail(rubric.Network, "m3: probe", "exfil.invalid resolved and was reached (exit 0); policy had defaultAction allow",
		"evidence/network/create-request.txt", "evidence/network/probe.txt"))
	must(r.Pass(rubric.Credential, "m3: canary", "no canary found in env, files or output"))
	must(r.NotMeasured(rubric.Injection, "d4: injection", rubric.CategoryPreconditionUnmet,
		"subject exited 2 before reading the CSV | no report.md to inspect"))
	must(r.Timeout(rubric.Budget, "m4: budget", "summary.json not written within 120s"))
	must(r.HarnessError(rubric.Observability, "m2: audit", "audit query failed: connection refused"))
	must(r.Pass(rubric.M0, "m0", "202/200/401/204/404 as expected", "evidence/M0/transcript.txt"))
	must(r.Pass(rubric.M1, "m1 run 1", "2 read back; file identical; 404"))
	must(r.Pass(rubric.M1, "m1 run 2", "2 read back; file identical; 404"))
	// D2 passed in one of two repetitions (--repeat 2): flaky.
	must(r.Pass(rubric.D2, "d2: vanish", "the run reported sandbox_gone and exited 3"))
	must(r.Fail(rubric.D2, "d2: vanish", "the run hung 120s after its sandbox vanished"))
	must(r.Flaky(rubric.D2, "d2: vanish", 1, 2))
	must(r.NotMeasured(rubric.D3, "d3", rubric.CategoryUnsupportedByTarget, "server answered 202 to 3 concurrent creates; it has no capacity limit"))
	return r.Outcomes()
}

func fixtureDoc(t *testing.T) Document {
	d, _ := Build(rubric.Course, fixtureMeta(), fixtureOutcomes(t), []DriftResult{
		{ID: rubric.M0, Status: DriftChanged, Baseline: "harness/report/baselines/mock/M0_1.snap",
			Detail: "normalised evidence differs from the baseline", Diff: "- < HTTP/1.1 202 Accepted\n+ < HTTP/1.1 200 OK"},
		{ID: rubric.Function, Status: DriftMatch, Baseline: "harness/report/baselines/mock/function_1.snap"},
	})
	return d
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "missing golden file; run go test ./harness/report -run Golden -update")
	assert.Equal(t, string(want), string(got), "%s differs from golden (go test ./harness/report -update)", p)
}

func TestGoldenMarkdown(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	require.NoError(t, WriteMarkdown(&b, fixtureDoc(t)))
	golden(t, "report.md", []byte(b.String()))
}

func TestGoldenJSON(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	require.NoError(t, WriteJSON(&b, fixtureDoc(t)))
	golden(t, "report.json", []byte(b.String()))
}

func TestGoldenJUnit(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	require.NoError(t, WriteJUnit(&b, fixtureDoc(t)))
	golden(t, "junit.xml", []byte(b.String()))
	var parsed junitSuites
	require.NoError(t, xml.Unmarshal([]byte(b.String()), &parsed), "junit.xml is well-formed")
}

func TestDocumentVerdictAndScore(t *testing.T) {
	t.Parallel()
	d := fixtureDoc(t)
	assert.Equal(t, rubric.OverallNotPassed, d.Verdict)
	assert.Equal(t, rubric.ExitGradedFail, d.ExitCode)
	assert.Contains(t, d.VerdictReason, "security criterion failed: network")
	assert.Equal(t, "1", d.SchemaVersion)
	assert.Len(t, d.Criteria, 10)
	assert.Len(t, d.Milestones, 6)
	assert.Len(t, d.Drills, 5)
	assert.Len(t, d.Scoring, 5)
}

func readAll(t *testing.T, dir string) (md, js, junit string) {
	t.Helper()
	for _, p := range []struct {
		name string
		dst  *string
	}{{MarkdownFile, &md}, {JSONFile, &js}, {JUnitFile, &junit}} {
		b, err := os.ReadFile(filepath.Join(dir, p.name))
		require.NoError(t, err)
		*p.dst = string(b)
	}
	return
}

func entryFromJSON(t *testing.T, js string, id rubric.ID) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	for _, list := range []string{"criteria", "milestones", "drills"} {
		for _, e := range doc[list].([]any) {
			m := e.(map[string]any)
			if m["id"] == string(id) {
				return m
			}
		}
	}
	t.Fatalf("%s not in report.json", id)
	return nil
}

// A not-measured outcome shows up as not measured WITH ITS REASON in every output.
func TestNotMeasuredReasonInEveryOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := Open(dir, rubric.Course, fixtureMeta(), Options{Now: fixedClock()})
	require.NoError(t, err)
	defer b.Close()
	reason := "server answered 202 to 3 concurrent creates (observed no capacity limit)"
	require.NoError(t, b.Results().NotMeasured(rubric.D3, "d3: capacity", rubric.CategoryUnsupportedByTarget, reason))
	require.NoError(t, b.Results().Pass(rubric.D2, "d2", "404 seen, no retry"))
	_, err = b.Finalize()
	require.NoError(t, err)
	md, js, junit := readAll(t, dir)

	assert.Contains(t, md, "| **D3** Drill 3 · 429 insufficient capacity | not measured (unsupported_by_target) | "+reason+" |")

	e := entryFromJSON(t, js, rubric.D3)
	assert.Equal(t, "not_measured", e["verdict"])
	assert.Equal(t, "unsupported_by_target", e["category"])
	assert.Equal(t, reason, e["reason"])

	var parsed junitSuites
	require.NoError(t, xml.Unmarshal([]byte(junit), &parsed))
	found := false
	for _, s := range parsed.Suites {
		for _, c := range s.Cases {
			if strings.HasPrefix(c.Name, "D3:") {
				found = true
				require.NotNil(t, c.Skipped)
				assert.Equal(t, "not measured (unsupported_by_target): "+reason, c.Skipped.Message)
				assert.Nil(t, c.Error, "not measured is never an error")
				assert.Nil(t, c.Failure)
			}
			if c.Skipped != nil {
				assert.NotEmpty(t, c.Skipped.Message, "every skipped case says why (%s)", c.Name)
			}
		}
	}
	assert.True(t, found)
	// An entry nothing measured says so too.
	m1 := entryFromJSON(t, js, rubric.M1)
	assert.Equal(t, rubric.NoScenarioReason, m1["reason"])
}

// A run that panics midway still leaves a report with what was measured.
func TestPanicMidwayLeavesReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	meta := fixtureMeta()
	meta.EndedAt = time.Time{}
	b, err := Open(dir, rubric.Course, meta, Options{Now: fixedClock()})
	require.NoError(t, err)
	defer b.Close()

	run := func() {
		defer b.Recover()
		require.NoError(t, b.Results().Pass(rubric.M0, "m0", "contract ok"))
		ref, err := b.Evidence(rubric.M0).WriteText("transcript.txt", "> POST /v1/sandboxes\n< HTTP/1.1 202 Accepted\n")
		require.NoError(t, err)
		require.NoError(t, b.Results().Fail(rubric.Isolation, "m1", "GET after delete returned 200", ref))
		// The journal is on disk before anything is finalized.
		j, _, err := ReadJournal(filepath.Join(dir, JournalFile))
		require.NoError(t, err)
		require.Len(t, j, 2)
		panic("boom in step 3")
	}
	assert.PanicsWithValue(t, "boom in step 3", run)

	md, js, junit := readAll(t, dir)
	assert.Contains(t, md, "**Run aborted:** panic: boom in step 3")
	assert.Contains(t, md, "| **M0** M0 · Contract verification | passed | contract ok |")
	assert.Contains(t, md, "[transcript.txt](evidence/M0/transcript.txt)")
	assert.Contains(t, junit, "GET after delete returned 200")
	var doc Document
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	assert.Equal(t, "panic: boom in step 3", doc.Aborted)
	assert.Equal(t, rubric.OverallNotPassed, doc.Verdict)
	assert.Equal(t, rubric.Passed, entryRow(doc, rubric.M0).Verdict)
	assert.False(t, doc.EndedAt.IsZero())
}

func entryRow(d Document, id rubric.ID) EntryRow {
	for _, l := range [][]EntryRow{d.Criteria, d.Milestones, d.Drills} {
		for _, r := range l {
			if r.ID == id {
				return r
			}
		}
	}
	return EntryRow{}
}

// A process killed before Finalize: RenderDir rebuilds from the journal,
// skipping a torn last line.
func TestRenderDirAfterKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	meta := fixtureMeta()
	meta.EndedAt = time.Time{}
	b, err := Open(dir, rubric.Course, meta, Options{Now: fixedClock()})
	require.NoError(t, err)
	require.NoError(t, b.Results().Pass(rubric.Function, "m2", "outputs produced"))
	require.NoError(t, b.Close())
	f, err := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, _ = f.WriteString(`{"seq":2,"id":"network","verd`)
	require.NoError(t, f.Close())

	doc, err := RenderDir(dir, rubric.Course, Options{Now: fixedClock()})
	require.NoError(t, err)
	assert.Equal(t, 1, doc.JournalSkipped)
	assert.Equal(t, rubric.Passed, entryRow(doc, rubric.Function).Verdict)
	assert.Contains(t, doc.Aborted, "without finalizing")
	assert.NotEqual(t, rubric.OverallPassed, doc.Verdict)
	assert.Equal(t, rubric.ExitHarnessError, doc.ExitCode)
	md, _, _ := readAll(t, dir)
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
	m := fixtureMeta()
	d, _ := Build(rubric.Course, m, r.Outcomes(), nil)
	assert.Equal(t, rubric.OverallPassed, d.Verdict)
	assert.Equal(t, 0, d.ExitCode)
	m.Aborted = "signal: interrupt"
	d, _ = Build(rubric.Course, m, r.Outcomes(), nil)
	assert.Equal(t, rubric.OverallIncomplete, d.Verdict)
	assert.Equal(t, rubric.ExitHarnessError, d.ExitCode)
	assert.Equal(t, "verdict: incomplete, score 92.5 of 92.5 measured (measured 92.5 of 100), exit code 2", SummaryLine(d))
}

func TestReproduce(t *testing.T) {
	t.Parallel()
	e, _ := rubric.Course.Get(rubric.Network)
	m := fixtureMeta()
	assert.Equal(t, `acceptance run --target mock --subject 'python3 agent.py --csv {csv} --out {out}' --seed 42 --tags @criterion:network`, Reproduce(m, e))
	m.Target, m.TargetKind, m.Subject = "http://127.0.0.1:8080", rubric.TargetReal, "it's"
	assert.Equal(t, `acceptance run --target http://127.0.0.1:8080 --api-key "$OPEN_SANDBOX_API_KEY" --subject 'it'\''s' --seed 42 --tags @criterion:network`, Reproduce(m, e))
	// --target docker makes its own key: --api-key there is a usage error.
	m.Target = "docker"
	assert.Equal(t, `acceptance run --target docker --subject 'it'\''s' --seed 42 --tags @criterion:network`, Reproduce(m, e))
	// A submission graded from its directory is graded again (issue 17: the
	// display name "name (/path)" is no command on PATH).
	m = fixtureMeta()
	m.Subject, m.SubmissionDir = "alice (/srv/class/alice smith)", "/srv/class/alice smith"
	assert.Equal(t, `acceptance grade --target mock --seed 42 --tags @criterion:network '/srv/class/alice smith'`, Reproduce(m, e))
	// The bundled reference is run as itself.
	m.Subject, m.SubmissionDir, m.Builtin = "reference (/repo/fixtures/submissions/reference)", "", true
	assert.Equal(t, `acceptance run --target mock --subject reference --seed 42 --tags @criterion:network`, Reproduce(m, e))
}

// TestJUnitCleansSubjectText: every string written into junit.xml — titles,
// reasons, evidence, reproduce lines, the subject, run id and target, in
// attributes and in CDATA bodies — may carry subject-derived bytes. Control
// characters, bytes that are not UTF-8, non-characters and "]]>" must not
// make the file unparseable; they show as visible escapes.
func TestJUnitCleansSubjectText(t *testing.T) {
	t.Parallel()
	nasty := "a\x00b\x01c\x1b[31mred\x7f \xff\xfe \ufffe\uffff ]]> <tag> & \"q\" \ttab\nnl ok:é"
	d := fixtureDoc(t)
	d.RunID, d.Subject, d.Target = nasty, nasty, nasty
	verdicts := map[rubric.Verdict]bool{}
	for _, rows := range [][]EntryRow{d.Criteria, d.Milestones, d.Drills} {
		for i := range rows {
			rows[i].Title, rows[i].Reason, rows[i].Reproduce = nasty, nasty, nasty
			rows[i].Evidence = append(rows[i].Evidence, nasty)
			verdicts[rows[i].Verdict] = true
		}
	}
	for _, v := range []rubric.Verdict{rubric.Failed, rubric.NotMeasured, rubric.Passed} {
		require.True(t, verdicts[v], "the fixture has a %s row (failure, skipped and plain cases are all covered)", v)
	}
	var b strings.Builder
	require.NoError(t, WriteJUnit(&b, d))
	out := b.String()
	assert.True(t, utf8.ValidString(out), "junit.xml is UTF-8")

	var parsed junitSuites
	require.NoError(t, xml.Unmarshal([]byte(out), &parsed), "junit.xml stays well-formed")
	// A full token walk too: Unmarshal skips what the structs do not name.
	dec := xml.NewDecoder(strings.NewReader(out))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	want := `a\x00b\x01c\x1b[31mred\x7f \xff\xfe \ufffe\uffff ]]> <tag> & "q" ` + "\ttab\nnl ok:é"
	assert.Equal(t, "acceptance "+want, parsed.Name)
	require.NotEmpty(t, parsed.Suites)
	var subject string
	for _, p := range parsed.Suites[0].Properties {
		if p.Name == "subject" {
			subject = p.Value
		}
	}
	assert.Equal(t, want, subject)
	var sawFailure, sawSkipped bool
	for _, s := range parsed.Suites {
		for _, c := range s.Cases {
			assert.Contains(t, c.Name, want)
			require.NotNil(t, c.SystemOut)
			assert.Contains(t, c.SystemOut.Text, "reason: "+want, "CDATA body round-trips, \"]]>\" included")
			assert.Contains(t, c.SystemOut.Text, "evidence: "+want)
			if c.Failure != nil {
				sawFailure = true
				assert.Contains(t, c.Failure.Message, want)
				assert.Contains(t, c.Failure.Text, "reproduce: "+want)
			}
			if c.Skipped != nil {
				sawSkipped = true
				assert.Contains(t, c.Skipped.Message, want)
			}
		}
	}
	assert.True(t, sawFailure && sawSkipped)
	// Clean text passes through untouched.
	assert.Equal(t, "plain ]]> text\t\r\n é ✓", xmlText("plain ]]> text\t\r\n é ✓"))
}
