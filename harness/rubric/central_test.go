package rubric

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEveryEntryHasACentralProperty: every entry of the course names what
// must have been exercised for it to pass, and the table names no other.
func TestEveryEntryHasACentralProperty(t *testing.T) {
	valid := []Exercise{ExerciseSandboxUsed, ExerciseCreateAttempted, ExerciseOwnChecks, ExerciseInputs}
	for _, e := range Course.All() {
		c, ok := CentralOf(e.ID)
		if !assert.True(t, ok, "%s has no central property", e.ID) {
			continue
		}
		assert.NotEmpty(t, c.Property, e.ID)
		assert.Contains(t, valid, c.Needs, e.ID)
		if e.Kind == KindScoring {
			assert.Equal(t, ExerciseInputs, c.Needs, "%s is a scoring item", e.ID)
		} else {
			assert.NotEqual(t, ExerciseInputs, c.Needs, "%s is graded", e.ID)
		}
	}
	for id := range CentralProperty {
		_, ok := Course.Get(id)
		assert.True(t, ok, "%s is no entry of the course", id)
	}
	// Issue 27: credential and M3 pass only on a run that worked in a sandbox.
	for _, id := range []ID{Credential, M3, D4} {
		assert.Equal(t, ExerciseSandboxUsed, CentralProperty[id].Needs, id)
	}
	// Every entry that fails only on a violation needs a run that could violate it.
	for _, id := range FailOnlyOnViolation {
		assert.True(t, slices.Contains([]Exercise{ExerciseSandboxUsed, ExerciseCreateAttempted}, CentralProperty[id].Needs), id)
	}
}

// TestEveryPartNotMeasuredIsNeverPassed: an entry whose outcomes are all
// not measured (the passes the steps turned into "not exercised" among them)
// is not measured, never passed; one exercised pass makes it passed, with
// the rest named as partly not measured.
func TestEveryPartNotMeasuredIsNeverPassed(t *testing.T) {
	nm := []Outcome{
		{ID: Credential, Seq: 1, Verdict: NotMeasured, Category: CategoryPreconditionUnmet, Reason: "not exercised: the subject created no sandbox (it exited 1)"},
		{ID: Credential, Seq: 2, Verdict: NotMeasured, Category: CategoryPreconditionUnmet, Reason: "no sandbox of this run called the data API"},
	}
	v, cat, reason := Fold(nm)
	assert.Equal(t, NotMeasured, v)
	assert.Equal(t, CategoryPreconditionUnmet, cat)
	assert.Contains(t, reason, "not exercised")
	v, _, reason = Fold(append(nm, Outcome{ID: Credential, Seq: 3, Verdict: Passed, Reason: "no planted secret in the sandbox"}))
	assert.Equal(t, Passed, v)
	assert.Contains(t, reason, "partly not measured: not exercised")
}
