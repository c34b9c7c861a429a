package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// An entry a scenario passed in some repetitions and failed in others is
// flaky: failed with a reason that says so, never passed.
func TestRecordFlaky(t *testing.T) {
	res := rubric.NewResults(rubric.Course)
	require.NoError(t, res.Pass(rubric.M1, "loop", ""))
	require.NoError(t, res.Fail(rubric.M1, "loop", "run 2 left a sandbox"))
	require.NoError(t, res.Pass(rubric.M1, "loop", ""))
	require.NoError(t, res.Pass(rubric.M2, "steady", ""))
	require.NoError(t, res.Pass(rubric.M2, "steady", ""))
	require.NoError(t, res.Pass(rubric.M2, "steady", ""))
	recordFlaky(res, 3)

	sum := rubric.Evaluate(rubric.Course, rubric.TargetMock, res.Outcomes())
	m1 := sum.Results[rubric.M1]
	assert.Equal(t, rubric.Failed, m1.Verdict)
	assert.Contains(t, m1.Reason, `flaky: "loop" passed in 2 and failed in 1 of 3 repetitions`)
	assert.Equal(t, rubric.Passed, sum.Results[rubric.M2].Verdict)
}
