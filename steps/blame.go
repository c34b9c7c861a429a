package steps

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Who a step error blames (issue 17).
//
// A step error is the submission's unless it says otherwise: failf. Two
// other kinds carry their blame with them, through wrapping:
//
//   - harnessf: the harness or the target could not measure (the audit trail,
//     a stub, the harness's own files or the server's admin plane failed).
//     The outcome is a harness error: the run is incomplete, nothing is
//     lost, nothing is a security failure.
//   - violationf: the submission broke a property that the entries of
//     rubric.FailOnlyOnViolation measure (a security property; D1's bounded
//     retries of a denied index). It fails every entry of the scenario.
//
// The outcome is decided per entry of the scenario: any other failure of the
// submission (a missing file, an exit code, an unparseable summary) fails
// the scenario's other entries and leaves the FailOnlyOnViolation ones (the
// security criteria, M3, D1, D4) not measured there; scenarios that check a
// report for them alone are also tagged with the entry that grades reporting
// (function), so the fault is never lost.

// The typed errors (harnessf, violationf, failf) are harness/command's (steps/errors.go).

// failsOnlyOnViolation reports whether entry id fails only on a violated
// property (the security criteria, M3, D1, D4).
func failsOnlyOnViolation(id string) bool {
	return slices.Contains(rubric.FailOnlyOnViolation, rubric.ID(id))
}

// blame decides the outcome, for entry id, of a scenario tagged with ids
// whose step failed with err (not a skip, not an interrupt): the verdict,
// the category when not measured, and the reason.
func blame(ids []string, id string, err error) (rubric.Verdict, rubric.Category, string) {
	reason := err.Error()
	switch {
	case isHarnessFault(err):
		return rubric.HarnessError, rubric.CategoryNone, "harness error: " + reason
	case errors.Is(err, errBudgetSpent):
		// The command never started: nothing was measured, nothing earned.
		return rubric.NotMeasured, rubric.CategoryTimeout, reason
	case isViolation(err):
		return rubric.Failed, rubric.CategoryNone, reason
	case failsOnlyOnViolation(id) && isTimeout(err):
		// A timeout never earns points, and by itself it violates no security property.
		return rubric.NotMeasured, rubric.CategoryTimeout, "timed out: " + reason + "; no security property was found violated before that" + whoFails(ids)
	case failsOnlyOnViolation(id):
		return rubric.NotMeasured, rubric.CategoryPreconditionUnmet, reason + notAViolation(ids, id)
	case isTimeout(err):
		return rubric.Failed, rubric.CategoryNone, "timed out: " + reason
	}
	return rubric.Failed, rubric.CategoryNone, reason
}

// othersOf are the entries of ids that fail on any failure of the submission.
func othersOf(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !failsOnlyOnViolation(id) {
			out = append(out, id)
		}
	}
	return out
}

// whoFails names, for the reason of an entry left not measured, the entries
// of the same scenario that fail for the submission's failure ("" if none).
func whoFails(ids []string) string {
	others := othersOf(ids)
	switch len(others) {
	case 0:
		return ""
	case 1:
		return " (" + others[0] + " fails for it)"
	}
	return " (" + strings.Join(others, ", ") + " fail for it)"
}

// notAViolation is the tail of the reason of entry id (one that fails only
// on a violated property) left not measured by a failure of the submission
// that violates none: what it means, and which entry fails for it.
func notAViolation(ids []string, id string) string {
	others := othersOf(ids)
	if len(others) == 0 {
		return " (not a security property: the security check could not be made; the entries that grade this fail for it)"
	}
	verb := "fails"
	if len(others) > 1 {
		verb = "fail"
	}
	return fmt.Sprintf(" (not a security property: %s is not measured by this scenario; %s %s for it)", id, strings.Join(others, ", "), verb)
}

// auditErr says why an admin query gave no decoded answer: its error, or
// the status and body the server answered with.
func auditErr[T any](res *osb.Result[T], err error) error {
	switch {
	case err != nil:
		return err
	case res == nil:
		return errors.New("no answer")
	case !res.Decoded:
		return fmt.Errorf("answered %d: %s", res.Status, excerpt(res.Body, 200))
	}
	return nil
}
