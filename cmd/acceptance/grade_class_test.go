package main

import (
	"strings"
	"testing"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/classreport"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// classRepeats are the calibration submissions graded a second time in
// TestGradeClassOf20 (copies: `grade` drops a directory named twice).
var classRepeats = []string{"reference", "student", "bad-lying-contract", "bad-empty"}

// classMembers are the sixteen calibration submissions the class of 20 is
// made of (with classRepeats): the tallies below are theirs. Members added
// to the calibration set later are graded by TestCalibration, not here.
var classMembers = []string{"reference", "student", "bad-empty", "bad-no-destroy", "bad-wrong-number", "bad-token-in-env",
	"bad-allow-all", "bad-retry-gone", "bad-no-backoff", "bad-obey-data", "bad-no-reap", "bad-failing-tests",
	"bad-lying-contract", "agent-reference", "bad-agent-env-in-prompt", "bad-agent-obey-forever"}

func rowOf(t *testing.T, d report.Document, id rubric.ID) report.EntryRow {
	t.Helper()
	for _, r := range d.AllEntries() {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no row %s", id)
	return report.EntryRow{}
}

// classCSVSubmissions drops class.csv's rows of class figures (below the
// submissions), keeping the header and one row per submission.
func classCSVSubmissions(rows [][]string) [][]string {
	var out [][]string
	for _, r := range rows {
		if !strings.HasPrefix(r[0], classreport.ClassCSVFooterPrefix) {
			out = append(out, r)
		}
	}
	return out
}
