package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// An output no renderer is registered for is an error naming the package to
// import, never a file silently left out.
func TestUnregisteredOutputIsAnError(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	err := renderTo(&buf, "report.txt", Document{})
	assert.EqualError(t, err, "no renderer is registered for report.txt (import harness/report/render)")
	assert.Zero(t, buf.Len())
}

// Scored gives the renderers the reviewer's final score when there is one,
// else the measured points alone; it leaves the measured document as it was.
func TestScoredSetsThePointsTheRenderersPrint(t *testing.T) {
	t.Parallel()
	d := Document{Scoring: []ScoringRow{{Item: "closed_loop", Weight: 25, Inputs: []rubric.ID{rubric.M0}}},
		Milestones: []EntryRow{{ID: rubric.M0, Verdict: rubric.Passed}}}
	s := Scored(d)
	require.NotNil(t, s.Points)
	assert.Equal(t, ComputeFinal(d, nil), s.Points)
	assert.Nil(t, s.Final, "no review: no reviewer's score")
	assert.Nil(t, d.Points, "the argument is not changed")
	reviewed := &Final{Reviewer: "R", Score: 1}
	d.Final = reviewed
	assert.Same(t, reviewed, Scored(d).Points)
}
