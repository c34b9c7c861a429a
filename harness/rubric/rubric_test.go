package rubric

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func rec(t *testing.T, r *Results, id ID, v Verdict, cat Category, reason string) {
	t.Helper()
	require.NoError(t, r.Record(Outcome{ID: id, Verdict: v, Category: cat, Reason: reason}))
}

// TestCourseRegistryShape pins the course's own facts: its numbers of
// criteria, milestones, drills and scoring items are the course text's, not
// derived. It is the one test a new entry (a D6 drill, say) must change; every
// other test and page derives its counts from rubric.Course
// (docs/maintaining.md, "Add a drill").
func TestCourseRegistryShape(t *testing.T) {
	t.Parallel()
	assert.Empty(t, CheckRegistry(Course))
	assert.Equal(t, 100, Course.TotalWeight())
	assert.Len(t, Course.OfKind(KindCriterion), 10)
	assert.Len(t, Course.OfKind(KindMilestone), 6)
	assert.Len(t, Course.OfKind(KindDrill), 5)
	assert.Len(t, Course.OfKind(KindScoring), 5)
	for _, id := range SecurityCriteria {
		e, ok := Course.Get(id)
		require.True(t, ok)
		assert.True(t, e.Security, id)
	}
	for _, e := range Course.Graded() {
		assert.True(t, strings.Contains(e.Statement, "MUST"), "%s statement is MUST-style", e.ID)
	}
	e, _ := Course.Get(Network)
	assert.Equal(t, "@criterion:network", e.Tag())
}

func TestCheckRegistryCatchesWeights(t *testing.T) {
	t.Parallel()
	reg := MustRegistry(
		Entry{ID: "a", Kind: KindCriterion, Statement: "MUST a", Evidence: []string{"x"}, Targets: both()},
		Entry{ID: "s", Kind: KindScoring, Statement: "MUST s", Weight: 90, Inputs: []ID{"a", "nope"}},
	)
	probs := strings.Join(CheckRegistry(reg), "\n")
	assert.Contains(t, probs, "sum to 90")
	assert.Contains(t, probs, `unknown input "nope"`)
}

func TestParseTag(t *testing.T) {
	t.Parallel()
	id, ok, err := Course.ParseTag("@criterion:network")
	assert.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, Network, id)
	_, ok, err = Course.ParseTag("@slow")
	assert.False(t, ok)
	assert.NoError(t, err)
	_, ok, err = Course.ParseTag("@criterion:netwrk")
	assert.True(t, ok)
	assert.ErrorContains(t, err, "unknown ID")
	_, _, err = Course.ParseTag("@milestone:network")
	assert.ErrorContains(t, err, "is a criterion")
	_, _, err = Course.ParseTag("@scoring:security")
	assert.Error(t, err)
	ids, err := Course.IDsFromTags([]string{"@drill:D1", "@wip", "@criterion:network", "@drill:D1"})
	assert.NoError(t, err)
	assert.Equal(t, []ID{Network, D1}, ids)
}

func writeFeature(t *testing.T, dir, name, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
}

func TestCheckFeaturesSynthetic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var tags []string
	for _, e := range Course.Graded() {
		if e.NeedsFeature() && e.ID != D3 {
			tags = append(tags, e.Tag())
		}
	}
	writeFeature(t, dir, "all.feature", fmt.Sprintf(`%s
Feature: everything
  Scenario: one
    Given a step
`, strings.Join(tags, " ")))
	writeFeature(t, dir, "bad.feature", `Feature: bad
  Rule: r
    @criterion:netwrk
    Scenario Outline: two
      Given <x>
      @drill:D3
      Examples:
        | x |
        | 1 |
`)
	probs, idx, err := Check(Course, dir)
	require.NoError(t, err)
	joined := strings.Join(probs, "\n")
	assert.Contains(t, joined, `bad.feature:3: rubric: tag "@criterion:netwrk" names unknown ID "netwrk"`)
	assert.NotContains(t, joined, "D3: no scenario", "a tag on Examples counts")
	assert.Len(t, probs, 1, joined)
	assert.NotEmpty(t, idx.Covered[Network])
	_, covered := idx.Covered[Cost]
	assert.False(t, covered)

	// An entry without a scenario is reported.
	require.NoError(t, os.Remove(filepath.Join(dir, "bad.feature")))
	probs, _, err = Check(Course, dir)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(probs, "\n"), "D3: no scenario is tagged @drill:D3")
}

// TestRegistryMatchesFeatures is the registry check against the real features.
func TestRegistryMatchesFeatures(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "features")
	files, _ := filepath.Glob(filepath.Join(dir, "*.feature"))
	if len(files) == 0 {
		t.Skipf("no .feature files in %s yet (the lead is writing them); registry-to-feature check not run", dir)
	}
	probs, _, err := Check(Course, dir)
	require.NoError(t, err)
	assert.Empty(t, probs, "registry vs features:\n%s", strings.Join(probs, "\n"))
}

func TestRecordValidation(t *testing.T) {
	t.Parallel()
	r := NewResults(Course)
	assert.ErrorContains(t, r.Pass("nope", "s", ""), "unknown ID")
	assert.ErrorContains(t, r.Pass(Security, "s", ""), "scoring item")
	assert.ErrorContains(t, r.NotMeasured(Network, "s", "", "why"), "needs a category")
	assert.ErrorContains(t, r.NotMeasured(Network, "s", CategoryTimeout, ""), "needs a reason")
	assert.ErrorContains(t, r.Fail(Network, "s", ""), "needs a reason")
	assert.ErrorContains(t, r.Record(Outcome{ID: Network, Verdict: Failed, Category: CategoryTimeout, Reason: "x"}), "must not carry")
	assert.ErrorContains(t, r.Record(Outcome{ID: Network, Verdict: "meh", Reason: "x"}), "unknown verdict")
	// Unknown IDs are not stored; malformed outcomes are kept, repaired,
	// without ever weakening a failure.
	outs := r.Outcomes()
	require.Len(t, outs, 5)
	want := []struct {
		v Verdict
		c Category
	}{{NotMeasured, CategoryPreconditionUnmet}, {NotMeasured, CategoryTimeout}, {Failed, ""}, {Failed, ""}, {HarnessError, ""}}
	for i, o := range outs {
		assert.Equal(t, want[i].v, o.Verdict, i)
		assert.Equal(t, want[i].c, o.Category, i)
		assert.Contains(t, o.Reason, "harness recorded an invalid outcome", i)
	}
	s := Evaluate(Course, TargetMock, outs)
	assert.Equal(t, Failed, s.Results[Network].Verdict)
	assert.Equal(t, ExitGradedFail, s.ExitCode())
}

func TestAggregate(t *testing.T) {
	t.Parallel()
	e, _ := Course.Get(Network)
	cases := []struct {
		name     string
		outs     []Outcome
		verdict  Verdict
		category Category
		reason   string
	}{
		{"none", nil, NotMeasured, CategoryNone, NoScenarioReason},
		{"pass", []Outcome{{Verdict: Passed, Reason: "denied"}}, Passed, "", "denied"},
		{"fail wins", []Outcome{{Verdict: Passed}, {Verdict: Failed, Reason: "reached exfil"}, {Verdict: HarnessError, Reason: "x"}}, Failed, "", "reached exfil"},
		{"error over pass", []Outcome{{Verdict: Passed}, {Verdict: HarnessError, Reason: "client crashed"}}, HarnessError, "", "client crashed"},
		{"timeout never passes", []Outcome{{Verdict: Passed}, {Verdict: NotMeasured, Category: CategoryTimeout, Reason: "probe timed out after 30s"}}, NotMeasured, CategoryTimeout, "probe timed out after 30s"},
		{"pass with partial nm", []Outcome{{Verdict: Passed, Reason: "ok"}, {Verdict: NotMeasured, Category: CategoryUnsupportedByTarget, Reason: "no audit"}}, Passed, "", "ok; partly not measured: no audit"},
		{"nm precedence", []Outcome{{Verdict: NotMeasured, Category: CategoryUnsupportedByTarget, Reason: "a"}, {Verdict: NotMeasured, Category: CategoryPreconditionUnmet, Reason: "b"}}, NotMeasured, CategoryPreconditionUnmet, "a; b"},
		{"flaky supersedes its scenario", []Outcome{{Verdict: Passed, Scenario: "s"}, {Verdict: Failed, Scenario: "s", Reason: "hung"},
			{Verdict: Flaky, Scenario: "s", Reason: "flaky: passed 1 of 2 repetitions"}}, Flaky, "", "flaky: passed 1 of 2 repetitions; when it failed: hung"},
		{"flaky over its timeouts", []Outcome{{Verdict: Passed, Scenario: "s"}, {Verdict: NotMeasured, Category: CategoryTimeout, Scenario: "s", Reason: "timed out"},
			{Verdict: Flaky, Scenario: "s", Reason: "flaky: passed 1 of 2 repetitions"}}, Flaky, "", "flaky: passed 1 of 2 repetitions; when it failed: timed out"},
		{"flaky over another harness error", []Outcome{{Verdict: Passed, Scenario: "s"}, {Verdict: Failed, Scenario: "s", Reason: "hung"},
			{Verdict: Flaky, Scenario: "s", Reason: "flaky"}, {Verdict: HarnessError, Scenario: "t", Reason: "x"}}, Flaky, "", "flaky; when it failed: hung"},
		{"another scenario's failure wins", []Outcome{{Verdict: Passed, Scenario: "s"}, {Verdict: Failed, Scenario: "s", Reason: "hung"},
			{Verdict: Flaky, Scenario: "s", Reason: "flaky"}, {Verdict: Failed, Scenario: "t", Reason: "leak"}}, Failed, "", "leak"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i := range c.outs {
				c.outs[i].ID = Network
				c.outs[i].Seq = int64(i + 1)
			}
			res := Aggregate(e, TargetMock, c.outs)
			assert.Equal(t, c.verdict, res.Verdict)
			assert.Equal(t, c.category, res.Category)
			assert.Equal(t, c.reason, res.Reason)
		})
	}
	// No outcome: the registry decides the category.
	cost, _ := Course.Get(Cost)
	res := Aggregate(cost, TargetMock, nil)
	assert.Equal(t, CategoryReviewerJudgment, res.Category)
	cred, _ := Course.Get(Credential)
	res = Aggregate(cred, TargetReal, nil)
	assert.Equal(t, CategoryUnsupportedByTarget, res.Category)
	assert.Contains(t, res.Reason, "admin API")
}

// On a target that cannot measure the entry, an unmet precondition (a
// submission without a model) is not the reason it is not measured: the
// target's limit is, whatever the subject does. Seen on the docker target:
// injection and D3 showed precondition_unmet ("no model in the loop"), when
// D3 was not measurable there (its 429 is now injected by the recording
// proxy); credential, which a real target cannot scan sandboxes for, stands
// in for them (injection and D4 are measured there now, from the run's own
// records).
func TestAggregateTargetLimitOverPrecondition(t *testing.T) {
	t.Parallel()
	outs := func(id ID) []Outcome {
		return []Outcome{
			{Seq: 1, ID: id, Verdict: NotMeasured, Category: CategoryUnsupportedByTarget, Reason: "target real: no way to exhaust capacity", Scenario: "platform"},
			{Seq: 2, ID: id, Verdict: NotMeasured, Category: CategoryPreconditionUnmet, Reason: "the submission has no model in the loop", Scenario: "agent"},
		}
	}
	for _, id := range []ID{Credential} {
		e, _ := Course.Get(id)
		res := Aggregate(e, TargetReal, outs(id))
		assert.Equal(t, NotMeasured, res.Verdict, id)
		assert.Equal(t, CategoryUnsupportedByTarget, res.Category, id)
		assert.True(t, strings.HasPrefix(res.Reason, e.Targets[TargetReal].Reason+"; the scenarios: "), "%s: %s", id, res.Reason)
		assert.Contains(t, res.Reason, "no model in the loop", id)
		// The bundled server can measure both: the precondition stays the reason.
		res = Aggregate(e, TargetMock, outs(id))
		assert.Equal(t, CategoryPreconditionUnmet, res.Category, id)
		assert.Equal(t, "target real: no way to exhaust capacity; the submission has no model in the loop", res.Reason, id)
	}
	// An entry the real target can measure keeps its precondition.
	m2, _ := Course.Get(M2)
	res := Aggregate(m2, TargetReal, outs(M2))
	assert.Equal(t, CategoryPreconditionUnmet, res.Category)
	// A timeout is never relabelled; a pass is not touched.
	d3, _ := Course.Get(D3)
	res = Aggregate(d3, TargetReal, []Outcome{{Seq: 1, ID: D3, Verdict: NotMeasured, Category: CategoryTimeout, Reason: "timed out"}})
	assert.Equal(t, CategoryTimeout, res.Category)
	res = Aggregate(d3, TargetReal, []Outcome{{Seq: 1, ID: D3, Verdict: Passed, Reason: "model 429 respected"}})
	assert.Equal(t, Passed, res.Verdict)
}

// passAllMeasurable records a pass for every entry measurable on target.
func passAllMeasurable(t *testing.T, r *Results, target Target) {
	for _, e := range Course.Graded() {
		if e.MeasurableOn(target) {
			rec(t, r, e.ID, Passed, "", "ok")
		}
	}
}

func TestScoringAllPassedMock(t *testing.T) {
	t.Parallel()
	r := NewResults(Course)
	passAllMeasurable(t, r, TargetMock)
	s := Evaluate(Course, TargetMock, r.Outcomes())
	assert.Equal(t, OverallPassed, s.Verdict, s.Why)
	assert.Equal(t, 0, s.ExitCode())
	// Everything but cost is measured: expression_review has M5 only (1 of 2 inputs).
	cost := EntryWeights(Course.Items())[Cost].Weight
	assert.Equal(t, Score{Earned: 100 - cost, Measured: 100 - cost, Total: 100}, s.Score)
	assert.Equal(t, Num(100-cost)+"/"+Num(100-cost)+" (measured "+Num(100-cost)+" of 100)", s.Score.String())
	for _, it := range s.Scoring {
		if it.Item == ExpressionReview {
			assert.Equal(t, float64(it.Weight)-cost, it.Measured)
			assert.Equal(t, float64(it.Weight)-cost, it.Earned)
		} else {
			assert.Equal(t, float64(it.Weight), it.Measured, it.Item)
		}
	}
}

func TestScoringNotMeasuredExcludedFromDenominator(t *testing.T) {
	t.Parallel()
	r := NewResults(Course)
	// security: 6 inputs. network passed, credential failed, injection not measured.
	rec(t, r, Network, Passed, "", "denied")
	rec(t, r, Credential, Failed, "", "token found in env")
	rec(t, r, Injection, NotMeasured, CategoryPreconditionUnmet, "subject produced no summary")
	s := Evaluate(Course, TargetMock, r.Outcomes())
	var sec ItemScore
	for _, it := range s.Scoring {
		if it.Item == Security {
			sec = it
		}
	}
	assert.Equal(t, 2, sec.InputsMeasured)
	assert.Equal(t, 1, sec.InputsPassed)
	assert.InDelta(t, 25.0*2/6, sec.Measured, 0.005)
	assert.InDelta(t, 25.0*1/6, sec.Earned, 0.005)
	assert.Equal(t, 8.33, s.Score.Measured)
	assert.Equal(t, 4.17, s.Score.Earned)
}

func TestTimeoutNeverScores(t *testing.T) {
	t.Parallel()
	r := NewResults(Course)
	passAllMeasurable(t, r, TargetMock)
	require.NoError(t, r.Timeout(Function, "m2", "subject output not read within 60s"))
	s := Evaluate(Course, TargetMock, r.Outcomes())
	assert.Equal(t, NotMeasured, s.Results[Function].Verdict)
	assert.Equal(t, CategoryTimeout, s.Results[Function].Category)
	assert.Equal(t, 92.5-5, s.Score.Measured)
	assert.Equal(t, 92.5-5, s.Score.Earned)
	assert.Equal(t, OverallIncomplete, s.Verdict)
	assert.Equal(t, ExitIncomplete, s.ExitCode())
	assert.Equal(t, []ID{Function}, s.Unmeasured)
}

func TestSecurityGate(t *testing.T) {
	t.Parallel()
	for _, id := range SecurityCriteria {
		t.Run(string(id), func(t *testing.T) {
			r := NewResults(Course)
			passAllMeasurable(t, r, TargetMock)
			rec(t, r, id, Failed, "", "observed a leak")
			s := Evaluate(Course, TargetMock, r.Outcomes())
			assert.Equal(t, OverallNotPassed, s.Verdict)
			assert.Equal(t, []ID{id}, s.SecurityFailed)
			assert.Greater(t, s.Score.Earned/s.Score.Measured, 0.9, "high score does not save it")
			assert.Equal(t, ExitGradedFail, s.ExitCode())
			assert.Contains(t, s.Why, "security criterion failed: "+string(id))
		})
	}
}

// A flaky entry is measured, never passed, earns nothing and gates the run
// like a failure; a flaky security criterion is a security failure.
func TestFlakyGatesLikeAFailure(t *testing.T) {
	t.Parallel()
	r := NewResults(Course)
	passAllMeasurable(t, r, TargetMock)
	require.NoError(t, r.Fail(Network, "", "reached exfil in repetition 2"))
	require.NoError(t, r.Flaky(Network, "", 1, 2))
	require.NoError(t, r.Fail(M2, "", "wrong number in repetition 3"))
	require.NoError(t, r.Flaky(M2, "", 2, 3))
	s := Evaluate(Course, TargetMock, r.Outcomes())
	assert.Equal(t, Flaky, s.Results[Network].Verdict)
	assert.Equal(t, []ID{Network, M2}, s.Flaky)
	assert.Empty(t, s.Failed)
	assert.Equal(t, []ID{Network}, s.SecurityFailed)
	assert.Equal(t, OverallNotPassed, s.Verdict)
	assert.Equal(t, ExitGradedFail, s.ExitCode())
	assert.Equal(t, "security criterion flaky (failed in some repetitions): network; also flaky: M2", s.Why)
	all := NewResults(Course)
	passAllMeasurable(t, all, TargetMock)
	full := Evaluate(Course, TargetMock, all.Outcomes())
	assert.Equal(t, full.Score.Measured, s.Score.Measured, "flaky entries are measured")
	w := EntryWeights(Course.Items())
	assert.InDelta(t, full.Score.Earned-w[Network].Weight-w[M2].Weight, s.Score.Earned, 0.005, "and earn nothing (their weights, derived from the course; scores are rounded to hundredths)")
	assert.Equal(t, "flaky (passed only some repetitions): M2", NotPassedReason(nil, []ID{M2}))
	assert.Equal(t, "failed: M1; flaky (passed only some repetitions): M2", NotPassedReason([]ID{M1}, []ID{M2}))

	// The outcome's shape: a reason, no category.
	assert.NoError(t, Outcome{ID: M1, Verdict: Flaky, Reason: "flaky: passed 1 of 2"}.Validate())
	assert.Error(t, Outcome{ID: M1, Verdict: Flaky}.Validate())
	assert.Error(t, Outcome{ID: M1, Verdict: Flaky, Reason: "x", Category: CategoryTimeout}.Validate())
}

func TestOverallVerdicts(t *testing.T) {
	t.Parallel()
	// Graded non-security failure.
	r := NewResults(Course)
	passAllMeasurable(t, r, TargetMock)
	rec(t, r, Budget, Failed, "", "exceeded 8 KiB output")
	s := Evaluate(Course, TargetMock, r.Outcomes())
	assert.Equal(t, OverallNotPassed, s.Verdict)
	assert.Empty(t, s.SecurityFailed)

	// Real target: mock-only entries unmeasured are not "incomplete".
	r = NewResults(Course)
	passAllMeasurable(t, r, TargetReal)
	s = Evaluate(Course, TargetReal, r.Outcomes())
	assert.Equal(t, OverallPassed, s.Verdict, s.Why)
	assert.Equal(t, CategoryUnsupportedByTarget, s.Results[Credential].Category)
	assert.Equal(t, Passed, s.Results[D4].Verdict, "D4 is measured on a real target (the run's own records)")
	assert.Equal(t, Passed, s.Results[D3].Verdict, "D3 is measured on a real target (the recording proxy's 429)")
	assert.Less(t, s.Score.Measured, 92.5)

	// Nothing recorded → incomplete.
	s = Evaluate(Course, TargetMock, nil)
	assert.Equal(t, OverallIncomplete, s.Verdict)
	assert.Equal(t, Score{Total: 100}, s.Score)

	// Harness error only → exit 2.
	r = NewResults(Course)
	passAllMeasurable(t, r, TargetMock)
	rec(t, r, M0, HarnessError, "", "osb client panicked")
	s = Evaluate(Course, TargetMock, r.Outcomes())
	assert.Equal(t, OverallIncomplete, s.Verdict)
	assert.Equal(t, ExitHarnessError, s.ExitCode())

	// Runtime-observed unsupported (e.g. isolation not enforced) is not incomplete.
	r = NewResults(Course)
	passAllMeasurable(t, r, TargetMock)
	s0 := len(r.Outcomes())
	_ = s0
	r2 := NewResults(Course)
	for _, o := range r.Outcomes() {
		if o.ID != Isolation {
			require.NoError(t, r2.Record(Outcome{ID: o.ID, Verdict: o.Verdict, Reason: o.Reason}))
		}
	}
	require.NoError(t, r2.NotMeasured(Isolation, "iso", CategoryUnsupportedByTarget, "server reports isolation.enforced=false"))
	s = Evaluate(Course, TargetMock, r2.Outcomes())
	assert.Equal(t, OverallPassed, s.Verdict, s.Why)

	assert.Equal(t, 3, ExitCode(OverallIncomplete, false))
	assert.Equal(t, 1, ExitCode(OverallNotPassed, true))
	assert.Equal(t, 0, ExitCode(OverallPassed, false))
}

type memSink struct {
	mu  sync.Mutex
	seq []int64
}

func (m *memSink) Append(o Outcome) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq = append(m.seq, o.Seq)
	return nil
}

func TestResultsConcurrent(t *testing.T) {
	t.Parallel()
	sink := &memSink{}
	r := NewResults(Course, sink)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ids, err := r.RecordTags([]string{"@criterion:function", "@milestone:M1"}, Outcome{Verdict: Passed, Scenario: fmt.Sprint(i)})
			assert.NoError(t, err)
			assert.Len(t, ids, 2)
		}(i)
	}
	wg.Wait()
	assert.Len(t, r.Outcomes(), 100)
	require.Len(t, sink.seq, 100)
	for i, s := range sink.seq {
		assert.Equal(t, int64(i+1), s, "sink sees outcomes in sequence order")
	}
}

func TestCheckFS(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"a.feature": {Data: []byte("@drill:D9\nFeature: f\n  Scenario: s\n    Given x\n")}}
	probs, _, err := CheckFS(Course, fsys)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(probs, "\n"), `a.feature:1: rubric: tag "@drill:D9" names unknown ID "D9"`)
	_, _, err = CheckFS(Course, fstest.MapFS{"b.feature": {Data: []byte("Feature: f\n  Scenario: s\n    Given x\n  Examples oops\n")}})
	assert.Error(t, err, "a broken feature file is an error, not a silent pass")
}
