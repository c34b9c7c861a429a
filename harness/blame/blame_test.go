package blame

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// TestPassStands is the rule alone: a pass stands only when the
// scenario's runs did what the entry's central property needs.
func TestPassStands(t *testing.T) {
	for _, tc := range []struct {
		name   string
		id     string
		x      *Exercise
		ok     bool
		v      rubric.Verdict
		reason string
	}{
		{"no subject run: the rule does not apply", "credential", nil, true, "", ""},
		{"no sandbox, exit 1", "credential", &Exercise{Runs: 1, Exits: []int{1}}, false, rubric.NotMeasured, "the subject created no sandbox (it exited 1)"},
		{"no sandbox, exit 0", "function", &Exercise{Runs: 1, Exits: []int{0}}, false, rubric.NotMeasured, "created no sandbox (it exited 0)"},
		{"no sandbox, D4", "D4", &Exercise{Runs: 1, Exits: []int{1}}, false, rubric.NotMeasured, "D4's central property"},
		{"a sandbox never used", "M3", &Exercise{Runs: 1, Created: 1, Exits: []int{0}}, false, rubric.NotMeasured, "ran no command and moved no file"},
		{"a sandbox used", "credential", &Exercise{Runs: 1, Created: 1, Used: 1, Exits: []int{0}}, true, "", ""},
		{"M1: one of three runs used one", "M1", &Exercise{Runs: 3, Created: 3, Used: 1, Exits: []int{0, 0, 0}}, true, "", ""},
		{"D3: refused creates are the exercise", "D3", &Exercise{Runs: 1, Attempted: 5, Exits: []int{1}}, true, "", ""},
		{"D3: the model refused", "D3", &Exercise{Runs: 1, Model: 3, Exits: []int{1}}, true, "", ""},
		{"D3: nothing asked", "D3", &Exercise{Runs: 1, Exits: []int{1}}, false, rubric.NotMeasured, "never asked for a sandbox"},
		{"own checks: the rule leaves them", "maintainability", &Exercise{Runs: 1, Exits: []int{0}}, true, "", ""},
		{"unreadable audit", "credential", &Exercise{Runs: 1, Unknown: "answered 500"}, false, rubric.HarnessError, "harness error"},
		{"unreadable audit of one run, another used a sandbox", "M1", &Exercise{Runs: 2, Created: 1, Used: 1, Unknown: "answered 500"}, true, "", ""},
		{"an entry without a central property", "nope", &Exercise{Runs: 1}, false, rubric.HarnessError, "no central property"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, v, cat, reason := PassStands(tc.id, tc.x)
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				return
			}
			assert.Equal(t, tc.v, v)
			assert.Contains(t, reason, tc.reason)
			if v == rubric.NotMeasured {
				assert.Equal(t, rubric.CategoryPreconditionUnmet, cat)
			}
		})
	}
}
