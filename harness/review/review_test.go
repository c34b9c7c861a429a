package review

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// The course's figures these tests expect, derived from the rubric (a
// changed weight changes them, not the tests).
var (
	weights = rubric.EntryWeights(rubric.Course.Items())
	costW   = weights[rubric.Cost].Weight
	maintW  = weights[rubric.Maintainability].Weight
	m5W     = weights[rubric.M5].Weight
	// m5Demo is the demonstration's part of M5, perQ one defense question's.
	m5Demo, perQ = rubric.M5Split(m5W)
	// judgedW is what a reviewer judges of referenceBundle, measuredW what
	// the harness measured (everything else).
	judgedW   = costW + maintW + m5W
	measuredW = 100 - judgedW
	// reviewItems is what a reviewer is asked: the reviewer entries, then
	// the defense questions.
	reviewItems = len(rubric.ReviewerEntries) + len(rubric.DefenseQuestions)
)

// num is a figure as the reports print it.
func num(f float64) string { return rubric.Num(f) }

// referenceBundle writes a finalized bundle as a fully passing reference run
// on the bundled server records it: every entry measurable on mock passed,
// and the reviewer parts (cost, maintainability's README check, M5's
// demonstration and defense questions) recorded as reviewer_judgment, as
// the steps do. fail, if set, is recorded as a measured failure.
func referenceBundle(t *testing.T, fail ...rubric.Outcome) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	n := 0
	clock := func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
	b, err := report.Open(dir, rubric.Course, report.Meta{RunID: "ref-1", Target: "mock", TargetKind: rubric.TargetMock,
		Subject: "reference", Seed: 7, StartedAt: t0}, report.Options{Now: clock})
	require.NoError(t, err)
	defer b.Close()
	r := b.Results()
	reviewer := map[rubric.ID]string{
		rubric.Cost:            "whether the submission explains its main cost items clearly is a reviewer's judgment",
		rubric.Maintainability: "whether another person can reproduce the run from the README needs a reviewer",
		rubric.M5:              "the defense questions are answered to a reviewer",
	}
	for _, e := range rubric.Course.Graded() {
		if why, ok := reviewer[e.ID]; ok {
			require.NoError(t, r.NotMeasured(e.ID, "review", rubric.CategoryReviewerJudgment, why))
			continue
		}
		if e.MeasurableOn(rubric.TargetMock) {
			require.NoError(t, r.Pass(e.ID, "scenario", "ok", "evidence/"+string(e.ID)+"/x.txt"))
		}
	}
	for _, o := range fail {
		require.NoError(t, r.Record(o))
	}
	_, err = b.Finalize()
	require.NoError(t, err)
	return dir
}

// fullMarks is a reviewer's answers giving every reviewer entry and question
// full marks (maintainability's as explicit points).
func fullMarks() string { return fmt.Sprintf(fullMarksTmpl, num(maintW), allQuestions()) }

const fullMarksTmpl = `reviewer: Rita Reviewer
entries:
  cost: {verdict: passed, note: "estimate table matches the measured figures"}
  maintainability: {verdict: passed, points: %s}
  M5: {verdict: passed}
questions:
%s`

func allQuestions() string {
	var b strings.Builder
	for _, q := range rubric.DefenseQuestions {
		fmt.Fprintf(&b, "  %d: {verdict: passed}\n", q.N)
	}
	return b.String()
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func TestReviewFromFileReaches100(t *testing.T) {
	t.Parallel()
	dir := referenceBundle(t)
	before := read(t, filepath.Join(dir, report.JSONFile))
	doc, err := report.ReadDocument(dir)
	require.NoError(t, err)
	require.Equal(t, rubric.OverallPassed, doc.Verdict, doc.VerdictReason)

	f, err := FromFile(dir, strings.NewReader(fullMarks()), "", t0)
	require.NoError(t, err)
	assert.Equal(t, 100.0, f.Score)
	assert.Equal(t, measuredW, f.MeasuredPoints, "the harness measured all but the reviewer entries")
	assert.Equal(t, judgedW, f.JudgedPoints, "cost + maintainability + M5 judged")
	assert.Equal(t, 0.0, f.OverridePoints)
	assert.True(t, f.Complete)
	assert.Equal(t, rubric.OverallPassed, f.Verdict, f.VerdictReason)
	prov := map[rubric.ID]report.Provenance{}
	for _, e := range f.Entries {
		prov[e.ID] = e.Provenance
	}
	assert.Equal(t, report.ProvJudged, prov[rubric.Cost])
	assert.Equal(t, report.ProvJudged, prov[rubric.M5])
	assert.Equal(t, report.ProvMeasured, prov[rubric.Network])

	assert.Equal(t, before, read(t, filepath.Join(dir, report.JSONFile)), "report.json (the measured part) is byte-identical")
	md := read(t, filepath.Join(dir, report.MarkdownFile))
	assert.Contains(t, md, "## Final score after review: 100 of 100")
	assert.Contains(t, md, "Points measured by the harness: **"+num(measuredW)+"**; judged by the reviewer: **"+num(judgedW)+"**")
	assert.Contains(t, md, "| cost | "+num(costW)+" | "+num(costW)+" | judged | passed | estimate table matches the measured figures |")
	html := read(t, filepath.Join(dir, report.HTMLFile))
	assert.Contains(t, html, `id="score">100 / 100<`)
	assert.Contains(t, read(t, filepath.Join(dir, report.JUnitFile)), `<property name="final_score" value="100 of 100 (measured `+num(measuredW)+`, judged `+num(judgedW)+`, overrides 0; reviewer Rita Reviewer)">`)
	gs := read(t, filepath.Join(dir, report.GradescopeFile))
	assert.Contains(t, gs, `"score": 100,`)
	validGradescope(t, gs)
	assert.Contains(t, read(t, filepath.Join(dir, report.ReviewFile)), `"reviewer": "Rita Reviewer"`)

	var out bytes.Buffer
	WriteSummary(&out, f)
	assert.Contains(t, out.String(), "final score: 100 of 100 (measured by the harness 80, judged by the reviewer 20)")
}

func validGradescope(t *testing.T, js string) {
	t.Helper()
	fh, err := os.Open(filepath.Join("..", "report", "render", "gradescope.schema.json"))
	require.NoError(t, err)
	defer fh.Close()
	doc, err := jsonschema.UnmarshalJSON(fh)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("s.json", doc))
	s, err := c.Compile("s.json")
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(js))
	require.NoError(t, err)
	require.NoError(t, s.Validate(inst))
}

func TestReviewOverrideNeedsReason(t *testing.T) {
	t.Parallel()
	dir := referenceBundle(t, rubric.Outcome{ID: rubric.Network, Verdict: rubric.Failed, Scenario: "probe",
		Reason: "exfil.capstone.test was reached (exit 0)"})
	before := read(t, filepath.Join(dir, report.JSONFile))

	_, err := FromFile(dir, strings.NewReader("reviewer: R\nentries:\n  network: {verdict: passed}\n"), "", t0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "entries.network.override_reason: network was measured by the harness (failed: exfil.capstone.test was reached (exit 0)); a reviewer's verdict on it is an override and needs a recorded reason")
	_, statErr := os.Stat(filepath.Join(dir, report.ReviewFile))
	assert.True(t, os.IsNotExist(statErr), "nothing recorded from invalid answers")

	ans := "reviewer: R\nentries:\n  network: {verdict: passed, override_reason: \"the probe host was on the allow list by the course's mistake\"}\n" +
		"  cost: {verdict: passed}\n  maintainability: {verdict: passed}\n  M5: {verdict: passed}\nquestions:\n" + allQuestions()
	f, err := FromFile(dir, strings.NewReader(ans), "", t0)
	require.NoError(t, err)
	var net report.FinalEntry
	for _, e := range f.Entries {
		if e.ID == rubric.Network {
			net = e
		}
	}
	assert.Equal(t, report.ProvOverride, net.Provenance)
	assert.Equal(t, rubric.Failed, net.MeasuredVerdict)
	netW := rubric.Round2(weights[rubric.Network].Weight)
	assert.Equal(t, netW, net.Points)
	assert.Equal(t, netW, f.OverridePoints)
	assert.Equal(t, rubric.OverallPassed, f.Verdict, "the override is the reviewer's, and shown as one")
	assert.Equal(t, before, read(t, filepath.Join(dir, report.JSONFile)), "the measured failure stays in report.json")
	md := read(t, filepath.Join(dir, report.MarkdownFile))
	assert.Contains(t, md, "**OVERRIDE** of the measured failed: "+render.Cell("the probe host was on the allow list by the course's mistake"))
	assert.Contains(t, md, "by reviewer overrides: **"+num(netW)+"**")
	assert.Contains(t, read(t, filepath.Join(dir, report.HTMLFile)), "Reviewer override (R): the probe host was on the allow list")
	gs := read(t, filepath.Join(dir, report.GradescopeFile))
	assert.Contains(t, gs, "Reviewer override (R): the probe host")
	assert.Contains(t, gs, `"provenance:override"`)
}

func TestReviewCannotPassMeasuredFailureOfReviewerEntry(t *testing.T) {
	t.Parallel()
	dir := referenceBundle(t, rubric.Outcome{ID: rubric.M5, Verdict: rubric.Failed, Scenario: "demo",
		Reason: "no failure drill could be demonstrated: D1 and D2 failed"})
	_, err := FromFile(dir, strings.NewReader("reviewer: R\nentries:\n  M5: {verdict: passed}\n"), "", t0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "entries.M5.override_reason: the harness measured a failure (no failure drill could be demonstrated: D1 and D2 failed); a reviewer cannot turn a measured failure into a pass")
	_, err = FromFile(dir, strings.NewReader("reviewer: R\nquestions:\n  1: {verdict: passed}\n"), "", t0)
	assert.ErrorContains(t, err, "questions.1: M5's measured part is failed")
}

func TestReviewValidationErrorsPerField(t *testing.T) {
	t.Parallel()
	dir := referenceBundle(t, rubric.Outcome{ID: rubric.Budget, Verdict: rubric.NotMeasured, Category: rubric.CategoryTimeout,
		Scenario: "budget", Reason: "summary.json not written within 120s"})
	cases := []struct{ answers, want string }{
		{"reviewer: R\nentries:\n  cost: {verdict: passed, points: " + num(costW+0.5) + "}\n", "entries.cost.points: " + num(costW+0.5) + " exceeds the entry's weight " + num(costW)},
		{"reviewer: R\nentries:\n  maintainability: {verdict: passed, points: " + num(maintW+2) + "}\n", "entries.maintainability.points: " + num(maintW+2) + " exceeds the entry's weight " + num(maintW)},
		{"reviewer: R\nentries:\n  M5: {verdict: passed, points: " + num(m5Demo+1.25) + "}\n", "entries.M5.points: " + num(m5Demo+1.25) + " exceeds the entry's weight " + num(m5Demo)},
		{"reviewer: R\nentries:\n  cost: {verdict: passed, points: -1}\n", "entries.cost.points: -1 is negative"},
		{"reviewer: R\nentries:\n  cost: {verdict: great}\n", `entries.cost.verdict: "great" is not passed or failed`},
		{"reviewer: R\nentries:\n  cost: {points: 3}\n", "entries.cost.verdict: required: passed or failed"},
		{"reviewer: R\nentries:\n  cost: {verdict: failed}\n", "entries.cost.note: a failed verdict needs a note saying what the submission did"},
		{"reviewer: R\nentries:\n  costs: {verdict: passed}\n", "entries.costs: no such entry in this bundle's score (known: "},
		{"reviewer: R\nentries:\n  security: {verdict: passed}\n", "entries.security: no such entry"},
		{"reviewer: R\nquestions:\n  16: {verdict: passed}\n", "questions.16: no such defense question (1–15)"},
		{"reviewer: R\nquestions:\n  3: {verdict: passed, points: " + num(2*perQ) + "}\n", "questions.3.points: " + num(2*perQ) + " exceeds the entry's weight " + num(perQ)},
		{"entries:\n  cost: {verdict: passed}\n", "reviewer: required"},
		{"reviewer: R\nentries:\n  budget: {verdict: passed, override_reason: x}\n", "entries.budget: the harness's measurement timed out (summary.json not written within 120s); a timeout never earns points and cannot be overridden"},
		{"reviewer: R\nentries:\n  cost: {verdict: passed, pionts: 3}\n", "field pionts not found"},
		{"", "the answers file is empty"},
		{"reviewer: R\nentries:\n  cost: {verdict: passed, points: .nan}\n", "entries.cost.points: NaN is not a number of points"},
		{"reviewer: R\nentries:\n  cost: {verdict: passed, points: .inf, override_reason: x}\n", "entries.cost.points: +Inf is not a number of points"},
		{"reviewer: \"R\\x1b[31m\"\nentries:\n  cost: {verdict: passed}\n", `reviewer: contains the control character '\x1b'`},
		{"reviewer: R\nentries:\n  cost: {verdict: failed, note: \"a\\0b\"}\n", `entries.cost.note: contains the control character '\x00'`},
	}
	for _, c := range cases {
		_, err := FromFile(dir, strings.NewReader(c.answers), "", t0)
		if assert.Error(t, err, c.answers) {
			assert.Contains(t, err.Error(), c.want, c.answers)
		}
	}
	// Several problems: every one is reported, one line per field.
	_, err := FromFile(dir, strings.NewReader("entries:\n  cost: {verdict: passed, points: 9}\n  M5: {verdict: maybe}\n"), "", t0)
	require.Error(t, err)
	assert.Len(t, strings.Split(err.Error(), "\n"), 3, err.Error())
}

func TestReviewPartialThenComplete(t *testing.T) {
	t.Parallel()
	dir := referenceBundle(t)
	f, err := FromFile(dir, strings.NewReader("reviewer: A\nentries:\n  cost: {verdict: passed, points: 5, note: rough}\n"), "", t0)
	require.NoError(t, err)
	assert.False(t, f.Complete)
	assert.Equal(t, measuredW+5, f.Score)
	assert.Equal(t, rubric.OverallIncomplete, f.Verdict)
	assert.Contains(t, f.VerdictReason, "awaiting a reviewer: maintainability, M5, 15 defense questions")
	// A second file adds the rest; the first answer is kept.
	f, err = FromFile(dir, strings.NewReader("reviewer: B\nentries:\n  maintainability: {verdict: passed}\n  M5: {verdict: passed}\nquestions:\n"+allQuestions()), "", t0)
	require.NoError(t, err)
	assert.True(t, f.Complete)
	assert.Equal(t, 100-costW+5, f.Score)
	// render (e.g. after a re-render from the journal) keeps the review.
	doc, err := report.RenderDir(dir, rubric.Course, report.Options{Review: Hook})
	require.NoError(t, err)
	require.NotNil(t, doc.Final)
	assert.Equal(t, 100-costW+5, doc.Final.Score)
}

func TestWalkInteractiveResumable(t *testing.T) {
	t.Parallel()
	dir := referenceBundle(t)
	// First session: reviewer name, then maintainability (verdict, an invalid
	// number re-asked, points, note), then cost, then the input ends.
	in := "Walt\nfailed\nabc\n0\nREADME lacks the run command\n\n6\nclear enough\n"
	var out bytes.Buffer
	f, err := Walk(dir, strings.NewReader(in), &out, WalkOptions{Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	s := out.String()
	assert.Contains(t, s, fmt.Sprintf("[2/%d] entries.cost: Cost: can clearly explain main cost items (up to %s points, scoring item expression_review)", reviewItems, num(costW)))
	assert.Contains(t, s, "a good answer covers: create time, execution time, sandbox lifespan")
	assert.Contains(t, s, `"abc" is not a number`)
	assert.Contains(t, s, fmt.Sprintf("Review paused: %d of %d items still to judge", reviewItems-2, reviewItems))
	assert.False(t, f.Complete)
	j, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, 6.0, j.Entries[rubric.Cost].Points)
	assert.Equal(t, rubric.Failed, j.Entries[rubric.Maintainability].Verdict)
	assert.Equal(t, "Walt", j.Reviewer)

	// Second session resumes at M5: Enter takes every default.
	out.Reset()
	f, err = Walk(dir, strings.NewReader(strings.Repeat("\n", 1+(reviewItems-2)*3)), &out, WalkOptions{Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	assert.Contains(t, out.String(), fmt.Sprintf("2 of %d already judged", reviewItems))
	assert.NotContains(t, out.String(), fmt.Sprintf("[1/%d]", reviewItems))
	assert.True(t, f.Complete, out.String())
	assert.Equal(t, measuredW+6+0+m5W, f.Score)
	assert.Equal(t, rubric.OverallNotPassed, f.Verdict, "the reviewer failed maintainability")
}

func TestWalkOverrideNeedsReason(t *testing.T) {
	t.Parallel()
	dir := referenceBundle(t, rubric.Outcome{ID: rubric.D1, Verdict: rubric.Failed, Scenario: "d1", Reason: "no network_policy class"})
	// Answer every reviewer item with defaults first.
	_, err := FromFile(dir, strings.NewReader(fullMarks()), "", t0)
	require.NoError(t, err)
	var out bytes.Buffer
	// The reason is asked first and again while it is empty; then verdict,
	// points and note take their defaults.
	in := "R\n\nthe drill's fault never switched on (server bug #12)\n\n\n\n"
	f, err := Walk(dir, strings.NewReader(in), &out, WalkOptions{Overrides: []rubric.ID{rubric.D1}, Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	s := out.String()
	assert.Contains(t, s, "an override replaces the harness's measured failed; it needs a recorded reason and is shown as an override.")
	assert.Contains(t, s, "an override needs a recorded reason")
	assert.Less(t, strings.Index(s, "Override reason (required"), strings.Index(s, "Verdict (passed/failed)"), "the reason is asked before the verdict")
	assert.NotContains(t, s, "not recorded:", "nothing is offered that validation refuses")
	var d1 report.FinalEntry
	for _, e := range f.Entries {
		if e.ID == rubric.D1 {
			d1 = e
		}
	}
	assert.Equal(t, report.ProvOverride, d1.Provenance)
	assert.Equal(t, "the drill's fault never switched on (server bug #12)", d1.OverrideReason)
}

// An entry the harness measured that also carries a reviewer note (the full
// run records M4's README scenario as reviewer_judgment, judged as
// maintainability) keeps its measured points and is not asked again.
func TestMeasuredEntryWithReviewerNoteKeepsMeasuredVerdict(t *testing.T) {
	t.Parallel()
	dir := referenceBundle(t, rubric.Outcome{ID: rubric.M4, Verdict: rubric.NotMeasured, Category: rubric.CategoryReviewerJudgment,
		Scenario: "README", Reason: "README reproducibility needs a reviewer"})
	doc, err := report.ReadDocument(dir)
	require.NoError(t, err)
	for _, it := range Items(doc) {
		assert.NotEqual(t, "entries.M4", it.Key)
	}
	f, err := FromFile(dir, strings.NewReader(fullMarks()), "", t0)
	require.NoError(t, err)
	assert.Equal(t, 100.0, f.Score)
	assert.True(t, f.Complete, f.Pending)
}

// A flaky entry (passed only some repetitions of --repeat) is never passed:
// a reviewer cannot make it passed, or give it points, without an override
// reason, and an override is shown as one. Its points stay 0 until then.
func TestReviewCannotPassFlakyWithoutReason(t *testing.T) {
	t.Parallel()
	dir := referenceBundle(t,
		rubric.Outcome{ID: rubric.M1, Verdict: rubric.Failed, Scenario: "scenario", Reason: "the second run left a sandbox"},
		rubric.Outcome{ID: rubric.M1, Verdict: rubric.Flaky, Scenario: "scenario", Reason: "flaky: passed 1 of 2 repetitions of scenario \"scenario\""},
		rubric.Outcome{ID: rubric.M5, Verdict: rubric.Failed, Scenario: "demo", Reason: "the demo run hung"},
		rubric.Outcome{ID: rubric.M5, Verdict: rubric.Flaky, Scenario: "demo", Reason: "flaky: passed 2 of 3 repetitions of scenario \"demo\""},
	)
	d, err := report.ReadDocument(dir)
	require.NoError(t, err)
	for _, r := range d.AllEntries() {
		if r.ID == rubric.M1 || r.ID == rubric.M5 {
			mv, _, _ := r.MeasuredPart()
			assert.Equal(t, rubric.Flaky, mv, r.ID)
		}
	}
	assert.Equal(t, rubric.OverallNotPassed, d.Verdict, "flaky gates like a failure")

	_, err = FromFile(dir, strings.NewReader("reviewer: R\nentries:\n  M1: {verdict: passed}\n"), "", t0)
	assert.ErrorContains(t, err, "entries.M1.override_reason: M1 was measured by the harness (flaky: flaky: passed 1 of 2 repetitions")
	_, err = FromFile(dir, strings.NewReader("reviewer: R\nentries:\n  M5: {verdict: passed}\n"), "", t0)
	assert.ErrorContains(t, err, "entries.M5.override_reason: the harness measured it flaky (flaky: passed 2 of 3 repetitions")
	_, err = FromFile(dir, strings.NewReader("reviewer: R\nentries:\n  M5: {verdict: failed, points: 1, note: half a demo}\n"), "", t0)
	assert.ErrorContains(t, err, "a reviewer cannot turn a flaky measurement into a pass or points")
	_, err = FromFile(dir, strings.NewReader("reviewer: R\nquestions:\n  1: {verdict: passed}\n"), "", t0)
	assert.ErrorContains(t, err, "questions.1: M5's measured part is flaky")

	// Without a review the flaky entries earn nothing.
	f := report.ComputeFinal(d, nil)
	for _, e := range f.Entries {
		if e.ID == rubric.M1 || e.ID == rubric.M5 {
			assert.Equal(t, rubric.Flaky, e.Verdict, e.ID)
			assert.Equal(t, 0.0, e.Points, e.ID)
			assert.Equal(t, report.ProvMeasured, e.Provenance, e.ID)
		}
	}

	ans := "reviewer: R\nentries:\n  M1: {verdict: passed, override_reason: \"the second repetition ran while the server was being restarted\"}\n"
	f, err = FromFile(dir, strings.NewReader(ans), "", t0)
	require.NoError(t, err)
	for _, e := range f.Entries {
		if e.ID == rubric.M1 {
			assert.Equal(t, report.ProvOverride, e.Provenance)
			assert.Equal(t, rubric.Flaky, e.MeasuredVerdict)
			assert.Equal(t, rubric.Passed, e.Verdict)
			assert.Equal(t, weights[rubric.M1].Weight, e.Points)
		}
	}
	md := read(t, filepath.Join(dir, report.MarkdownFile))
	assert.Contains(t, md, "**OVERRIDE** of the measured flaky: "+render.Cell("the second repetition ran while the server was being restarted"))
	assert.Equal(t, rubric.OverallNotPassed, f.Verdict, "M5 is still flaky")
}

// The interactive review says up front when the harness measured a reviewer
// entry flaky or failed, and offers only what validation accepts: failed
// with 0 points confirms it, passed is an override whose reason is asked at
// once. M5's defense questions are not asked while its measured part is
// flaky (they earn nothing); a timed-out entry is shown and skipped. Nothing
// the walk offers is refused by validation.
func TestWalkFlakyOrFailedOffersOnlyValid(t *testing.T) {
	t.Parallel()
	dir := referenceBundle(t,
		rubric.Outcome{ID: rubric.M5, Verdict: rubric.Failed, Scenario: "demo", Reason: "the demo run hung"},
		rubric.Outcome{ID: rubric.M5, Verdict: rubric.Flaky, Scenario: "demo", Reason: "flaky: passed 2 of 3 repetitions of scenario \"demo\""},
		rubric.Outcome{ID: rubric.Cost, Verdict: rubric.Failed, Scenario: "budget", Reason: "summary.json has no cost figures"},
		rubric.Outcome{ID: rubric.Maintainability, Verdict: rubric.NotMeasured, Category: rubric.CategoryTimeout, Scenario: "tests",
			Reason: "the submission's test.unit command ran past 5m0s"},
	)
	now := func() time.Time { return t0 }
	// First walk: Enter everywhere confirms both measurements.
	var out bytes.Buffer
	f, err := Walk(dir, strings.NewReader("Rita\n"+strings.Repeat("\n", 8)), &out, WalkOptions{Now: now})
	require.NoError(t, err)
	s := out.String()
	t.Log(s)
	assert.Contains(t, s, "[1/18] entries.maintainability:")
	assert.Contains(t, s, "not open to review: the harness's measurement timed out (the submission's test.unit command ran past 5m0s)")
	assert.Contains(t, s, "[2/18] entries.cost:")
	assert.Contains(t, s, "the harness measured it failed: it earns nothing unless you override the measurement with a recorded reason (shown as an override).")
	assert.Contains(t, s, "Verdict (failed confirms the measurement; passed overrides it) [failed]")
	assert.Contains(t, s, "points: 0 (a measured failed earns nothing without an override)")
	assert.Contains(t, s, "Note [confirmed the measured failed: summary.json has no cost figures]")
	assert.Contains(t, s, "the harness measured it flaky: it earns nothing unless you override")
	assert.Contains(t, s, fmt.Sprintf("[4–%d/%d] questions.1–%d: not open to review: M5's measured part is flaky", reviewItems, reviewItems, len(rubric.DefenseQuestions)))
	assert.NotContains(t, s, "Defense question 1:", "the questions are not asked")
	assert.NotContains(t, s, "not recorded:")
	assert.NotContains(t, s, "paused")
	assert.True(t, f.Complete, f.Pending)
	j, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, rubric.Failed, j.Entries[rubric.Cost].Verdict)
	assert.Equal(t, 0.0, j.Entries[rubric.Cost].Points)
	assert.Contains(t, s, `measured: flaky: passed 2 of 3 repetitions of scenario "demo"; when it failed: the demo run hung`)
	assert.Equal(t, `confirmed the measured flaky: passed 2 of 3 repetitions of scenario "demo"; when it failed: the demo run hung`, j.Entries[rubric.M5].Note)
	assert.NotContains(t, j.Entries, rubric.Maintainability)
	assert.Empty(t, j.Questions)

	// Second walk (--redo): passed on M5 asks for the override reason at
	// once (again while empty); the points default to the whole entry's.
	out.Reset()
	in := "\n" + // reviewer
		"\n\n" + // cost: keep failed, keep the note
		"passed\n\nthe third repetition ran while the host was swapping\n\nshown live in the defense\n"
	f, err = Walk(dir, strings.NewReader(in), &out, WalkOptions{Redo: true, Now: now})
	require.NoError(t, err)
	s = out.String()
	t.Log(s)
	assert.Contains(t, s, "an override needs a recorded reason")
	assert.Less(t, strings.LastIndex(s, "Override reason (required"), strings.LastIndex(s, "Points (0–"+num(m5W)+") ["+num(m5W)+"]"), "reason first, then points up to M5's whole weight")
	assert.NotContains(t, s, "not recorded:")
	var m5 report.FinalEntry
	for _, e := range f.Entries {
		if e.ID == rubric.M5 {
			m5 = e
		}
	}
	assert.Equal(t, report.ProvOverride, m5.Provenance)
	assert.Equal(t, rubric.Flaky, m5.MeasuredVerdict)
	assert.Equal(t, m5W, m5.Points)
	assert.Equal(t, "the third repetition ran while the host was swapping", m5.OverrideReason)
	assert.Equal(t, "shown live in the defense", m5.Note, "the note of the confirmed failure is not the override's default")
	assert.Contains(t, s, "Note: ", "no default note for the override")
	assert.Contains(t, read(t, filepath.Join(dir, report.MarkdownFile)), "**OVERRIDE** of the measured flaky: the third repetition ran while the host was swapping")

	// --override of a timed-out entry, or of a reviewer entry with nothing
	// to override, is refused before anything is asked.
	_, err = Walk(dir, strings.NewReader(""), &out, WalkOptions{Overrides: []rubric.ID{rubric.Maintainability}, Now: now})
	assert.ErrorContains(t, err, "--override maintainability: the harness's measurement timed out (the submission's test.unit command ran past 5m0s)")
	_, err = Walk(referenceBundle(t), strings.NewReader(""), &out, WalkOptions{Overrides: []rubric.ID{rubric.Cost}, Now: now})
	assert.ErrorContains(t, err, "--override cost: cost has no measured failure (nor flaky measurement) to override")
	_, err = Walk(referenceBundle(t), strings.NewReader(""), &out, WalkOptions{Overrides: []rubric.ID{rubric.D2}, Now: now})
	assert.NoError(t, err, "a measured pass can be overridden (with a reason)")
}
