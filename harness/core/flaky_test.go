package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// An entry a scenario passed in some repetitions and failed in others is
// flaky: its own verdict, never passed, earning nothing, and the run is not
// passed. A scenario that failed every time stays failed; one that passed
// every time stays passed.
func TestRecordFlaky(t *testing.T) {
	res := rubric.NewResults(rubric.Course)
	var ends []int
	rep := func(f func()) {
		f()
		ends = append(ends, len(res.Outcomes()))
	}
	must := func(err error) { require.NoError(t, err) }
	rep(func() {
		must(res.Pass(rubric.M1, "loop", ""))
		must(res.Pass(rubric.M1, "loop", "")) // two passes in one repetition count once
		must(res.Pass(rubric.M2, "steady", ""))
		must(res.Fail(rubric.M3, "broken", "always"))
	})
	rep(func() {
		must(res.Pass(rubric.M1, "loop", ""))
		must(res.Fail(rubric.M1, "loop", "run 2 left a sandbox"))
		must(res.Pass(rubric.M2, "steady", ""))
		must(res.Fail(rubric.M3, "broken", "always"))
	})
	rep(func() {
		must(res.Pass(rubric.M1, "loop", ""))
		must(res.Pass(rubric.M2, "steady", ""))
		must(res.Fail(rubric.M3, "broken", "always"))
	})
	lines := recordFlaky(res, ends)
	assert.Equal(t, []string{`flaky         M1: passed 2 of 3 repetitions of "loop" (never passed, no points)`}, lines)

	sum := rubric.Evaluate(rubric.Course, rubric.TargetMock, res.Outcomes())
	m1 := sum.Results[rubric.M1]
	assert.Equal(t, rubric.Flaky, m1.Verdict)
	assert.Contains(t, m1.Reason, `flaky: passed 2 of 3 repetitions of scenario "loop"`)
	assert.Contains(t, m1.Reason, "when it failed: run 2 left a sandbox")
	assert.Equal(t, rubric.Passed, sum.Results[rubric.M2].Verdict)
	assert.Equal(t, rubric.Failed, sum.Results[rubric.M3].Verdict)
	assert.Equal(t, []rubric.ID{rubric.M1}, sum.Flaky)
	assert.Equal(t, rubric.OverallNotPassed, sum.Verdict)
	assert.Contains(t, sum.Why, "flaky (passed only some repetitions): M1")
	for _, it := range sum.Scoring {
		if it.Item == rubric.ClosedLoop { // fed by M1, the only one measured
			assert.Equal(t, 1, it.InputsMeasured, "flaky is measured")
			assert.Equal(t, 0, it.InputsPassed, "flaky never passes")
			assert.Equal(t, 0.0, it.Earned, "flaky earns nothing")
			assert.Equal(t, 5.0, it.Measured)
		}
	}
}
