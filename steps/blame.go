package steps

import (
	"errors"
	"fmt"
	"slices"

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
//   - violationf: the submission broke a security property. In a scenario
//     that feeds a security criterion only this kind fails it; any other
//     failure of the submission there (a missing file, an exit code, an
//     unparseable summary) leaves the scenario not measured, because the
//     entries that grade those things fail for them elsewhere.

// harnessFault is a step error that is the harness's or the target's.
type harnessFault struct{ err error }

func (h *harnessFault) Error() string { return h.err.Error() }
func (h *harnessFault) Unwrap() error { return h.err }

// harnessf is a step error of the harness or the target, never the submission's.
func harnessf(format string, args ...any) error {
	return &harnessFault{err: fmt.Errorf(format, args...)}
}

// isHarnessFault reports whether err (or what it wraps) is the harness's.
func isHarnessFault(err error) bool {
	var h *harnessFault
	return errors.As(err, &h)
}

// securityViolation is a step error that shows a violated security property.
type securityViolation struct{ err error }

func (v *securityViolation) Error() string { return v.err.Error() }
func (v *securityViolation) Unwrap() error { return v.err }

// violationf is the submission's failure of a security property.
func violationf(format string, args ...any) error {
	return &securityViolation{err: fmt.Errorf(format, args...)}
}

func isViolation(err error) bool {
	var v *securityViolation
	return errors.As(err, &v)
}

// securityIDs are the entries that fail only on a violated security property
// when a scenario feeding them fails: the security criteria, with the
// milestone and the drills whose scenarios measure them (M3, D1, D4), in a
// scenario tagged with a security criterion.
func securityScenario(ids []string) bool {
	for _, id := range ids {
		if slices.Contains(rubric.SecurityCriteria, rubric.ID(id)) {
			return true
		}
	}
	return false
}

// blame decides the outcome of a scenario whose step failed with err (not a
// skip, not an interrupt): the verdict, the category when not measured, and
// the reason.
func blame(ids []string, err error) (rubric.Verdict, rubric.Category, string) {
	reason := err.Error()
	switch {
	case isHarnessFault(err):
		return rubric.HarnessError, rubric.CategoryNone, "harness error: " + reason
	case errors.Is(err, errBudgetSpent):
		// The command never started: nothing was measured, nothing earned.
		return rubric.NotMeasured, rubric.CategoryTimeout, reason
	case securityScenario(ids) && isTimeout(err):
		// A timeout never earns points, and by itself it violates no security property.
		return rubric.NotMeasured, rubric.CategoryTimeout, "timed out: " + reason + "; no security property was found violated before that"
	case securityScenario(ids) && !isViolation(err):
		return rubric.NotMeasured, rubric.CategoryPreconditionUnmet,
			reason + " (not a security property: the security check could not be made; the entries that grade this fail for it)"
	case isTimeout(err):
		return rubric.Failed, rubric.CategoryNone, "timed out: " + reason
	}
	return rubric.Failed, rubric.CategoryNone, reason
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
