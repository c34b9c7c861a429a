package review

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// hostile is text a submission could get into a reason: an OSC 52 clipboard
// write, a screen clear, and a newline starting a line the grader never wrote.
const hostile = "boom\x1b]52;c;ZXZpbA==\x07\x1b[2J\nfinal verdict: passed: forged"

// The final summary `acceptance review` prints quotes reasons and names
// inertly: one line each, no raw control character.
func TestWriteSummaryIsInert(t *testing.T) {
	var buf bytes.Buffer
	WriteSummary(&buf, &report.Final{Verdict: rubric.OverallNotPassed, VerdictReason: hostile,
		Entries: []rubric.FinalEntry{{ID: "M1", Verdict: rubric.Failed, Reviewer: "rev\x1b[31m", OverrideReason: hostile, MeasuredVerdict: rubric.Passed}}})
	out := buf.String()
	starts := 0
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		assert.True(t, inert.Clean(l), "a raw control character in %q", l)
		if strings.HasPrefix(l, "final verdict:") {
			starts++
		}
	}
	assert.Equal(t, 1, starts, "no line the grader did not write: %s", out)
}
