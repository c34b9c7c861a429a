package rubric

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomWeights gives n positive integer weights summing to total.
func randomWeights(rng *rand.Rand, n, total int) []int {
	w := make([]int, n)
	for i := range w {
		w[i] = 1
	}
	for range total - n {
		w[rng.IntN(n)]++
	}
	return w
}

// randomCourse is Course with its scoring items' weights drawn at random
// (summing to 100) and, when shuffle is set, every graded entry feeding a
// random item (each item keeps at least one input).
func randomCourse(t *testing.T, rng *rand.Rand, shuffle bool) *Registry {
	t.Helper()
	items := Course.OfKind(KindScoring)
	weights := randomWeights(rng, len(items), 100)
	inputs := map[ID][]ID{}
	if shuffle {
		graded := Course.Graded()
		perm := rng.Perm(len(graded))
		for i, k := range perm {
			it := items[i%len(items)].ID // the first len(items) entries seed every item
			if i >= len(items) {
				it = items[rng.IntN(len(items))].ID
			}
			inputs[it] = append(inputs[it], graded[k].ID)
		}
	}
	var entries []Entry
	n := 0
	for _, e := range Course.All() {
		if e.Kind == KindScoring {
			e.Weight = weights[n]
			n++
			if shuffle {
				e.Inputs = inputs[e.ID]
			}
		}
		entries = append(entries, e)
	}
	reg, err := NewRegistry(entries...)
	require.NoError(t, err)
	return reg
}

// perfectReview is a report of reg in which everything measured passed and a
// reviewer gave every reviewer-judged entry and defense question full marks,
// typed as the review tool shows them (rounded to two decimals) or exact.
func perfectReview(reg *Registry, rounded bool) (Sheet, *Judgments) {
	s := Sheet{Items: reg.Items(), Target: TargetMock}
	j := &Judgments{Reviewer: "r", Entries: map[ID]Judgment{}, Questions: map[int]Judgment{}}
	full := func(p float64) float64 {
		if rounded {
			return Round2(p)
		}
		return p
	}
	weights := EntryWeights(s.Items)
	for _, e := range reg.Graded() {
		r := Row{ID: e.ID, Title: e.Title, Verdict: Passed}
		w := weights[e.ID].Weight
		switch {
		case e.ID == M5: // a measured demonstration with a reviewer part
			r.Outcomes = []RowOutcome{{Scenario: "demo", Verdict: Passed}, {Scenario: "review", Verdict: NotMeasured, Category: CategoryReviewerJudgment}}
			demo, each := M5Split(w)
			j.Entries[e.ID] = Judgment{Verdict: Passed, Points: full(demo)}
			for _, q := range DefenseQuestions {
				j.Questions[q.N] = Judgment{Verdict: Passed, Points: full(each)}
			}
		case e.ReviewGuide != "":
			r.Verdict, r.Category = NotMeasured, CategoryReviewerJudgment
			r.Outcomes = []RowOutcome{{Scenario: "review", Verdict: NotMeasured, Category: CategoryReviewerJudgment}}
			j.Entries[e.ID] = Judgment{Verdict: Passed, Points: full(w)}
		}
		s.Rows = append(s.Rows, r)
	}
	return s, j
}

// Under any weights summing to 100, a perfect review scores exactly 100 (not
// 100.05: the points are summed unrounded and rounded once), every item earns
// exactly its weight, and a run in which everything measurable passed earns
// exactly what it measured.
func TestPerfectReviewScoresExactly100(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(28, 4))
	for i := range 2000 {
		reg := randomCourse(t, rng, i%2 == 1)
		rounded := i%4 < 2
		s, j := perfectReview(reg, rounded)
		f := ComputeFinal(s, j)
		require.True(t, f.Complete, "run %d: pending %v", i, f.Pending)
		require.Equal(t, OverallPassed, f.Verdict, "run %d: %s", i, f.VerdictReason)
		require.Equal(t, 100.0, f.Total, "run %d", i)
		require.Equal(t, 100.0, f.Score, "run %d (weights %v, reviewer typed rounded figures: %v)", i, s.Items, rounded)
		require.InDelta(t, 100.0, f.MeasuredPoints+f.JudgedPoints, 0.0101, "run %d: each part is rounded on its own", i)
		for _, it := range f.Items {
			require.Equal(t, float64(it.Weight), it.Points, "run %d: item %s", i, it.Item)
		}
		for _, fe := range f.Entries {
			require.True(t, fe.EarnedInFull(), "run %d: %s earned %v of %v", i, fe.ID, fe.Points, fe.Weight)
		}

		r := NewResults(reg)
		for _, e := range reg.Graded() {
			if e.MeasurableOn(TargetMock) {
				rec(t, r, e.ID, Passed, "", "ok")
			}
		}
		sum := Evaluate(reg, TargetMock, r.Outcomes())
		require.Equal(t, sum.Score.Measured, sum.Score.Earned, "run %d", i)
		require.Equal(t, Round2(sum.Score.Earned), sum.Score.Earned, "run %d", i)
	}
}

// The weights the review tool offers are M5Split's, and they add up to M5's.
func TestM5Split(t *testing.T) {
	t.Parallel()
	for _, w := range []float64{7.5, 8, 16.0 / 3, 1} {
		demo, each := M5Split(w)
		assert.InDelta(t, w, demo+each*float64(len(DefenseQuestions)), 1e-9, "%v", w)
		assert.Positive(t, demo)
		assert.Positive(t, each)
	}
}

// Two point figures compare beyond rounding only.
func TestPointsTolerance(t *testing.T) {
	t.Parallel()
	assert.False(t, PointsExceed(4.17, 25.0/6), "the shown weight does not exceed it")
	assert.True(t, PointsExceed(4.18, 25.0/6))
	assert.False(t, PointsBelow(4.16667, 4.17))
	assert.True(t, PointsBelow(4.16, 4.17))
	assert.True(t, FinalEntry{Verdict: Passed, Points: 4.17, Weight: 4.17}.EarnedInFull())
	assert.False(t, FinalEntry{Verdict: Passed, Points: 4.16, Weight: 4.17}.EarnedInFull())
	assert.False(t, FinalEntry{Verdict: Failed, Points: 4.17, Weight: 4.17}.EarnedInFull())
	assert.False(t, FinalEntry{Verdict: Passed}.EarnedInFull(), "nothing earned is never full marks")
}
