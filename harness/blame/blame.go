// Package blame decides what a failed or passed scenario means for each of
// its rubric entries. Who a step error blames: a fault of the harness or the
// target is never the student's failure.
//
// A step error is the submission's unless it says otherwise
// (command.Failf). Two other kinds carry their blame with them, through wrapping:
//
//   - command.Harnessf: the harness or the target could not measure (the audit trail,
//     a stub, the harness's own files or the server's admin plane failed).
//     The outcome is a harness error: the run is incomplete, nothing is
//     lost, nothing is a security failure.
//   - command.Violationf: the submission broke a property that the entries of
//     rubric.FailOnlyOnViolation measure (a security property; D1's bounded
//     retries of a denied index). It fails every entry of the scenario.
//
// The outcome is decided per entry of the scenario: any other failure of the
// submission (a missing file, an exit code, an unparseable summary) fails
// the scenario's other entries and leaves the FailOnlyOnViolation ones (the
// security criteria, M3, D1, D4) not measured there; scenarios that check a
// report for them alone are also tagged with the entry that grades reporting
// (function), so the fault is never lost. Verdict applies this rule.
//
// No points for what never ran: an entry passes only when its central
// property (rubric.CentralProperty) was exercised by the scenario's subject
// runs (Exercise). PassStands applies that rule.
package blame

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// FailsOnlyOnViolation reports whether entry id fails only on a violated
// property (the security criteria, M3, D1, D4).
func FailsOnlyOnViolation(id string) bool {
	return slices.Contains(rubric.FailOnlyOnViolation, rubric.ID(id))
}

// Verdict decides the outcome, for entry id, of a scenario tagged with ids
// whose step failed with err (not a skip, not an interrupt): the verdict,
// the category when not measured, and the reason.
func Verdict(ids []string, id string, err error) (rubric.Verdict, rubric.Category, string) {
	reason := err.Error()
	switch {
	case command.IsHarnessFault(err):
		return rubric.HarnessError, rubric.CategoryNone, "harness error: " + reason
	case errors.Is(err, command.ErrBudgetSpent):
		// The command never started: nothing was measured, nothing earned.
		return rubric.NotMeasured, rubric.CategoryTimeout, reason
	case command.IsViolation(err):
		return rubric.Failed, rubric.CategoryNone, reason
	case FailsOnlyOnViolation(id) && command.IsTimeout(err):
		// A timeout never earns points, and by itself it violates no security property.
		return rubric.NotMeasured, rubric.CategoryTimeout, "timed out: " + reason + "; no security property was found violated before that" + whoFails(ids)
	case FailsOnlyOnViolation(id):
		return rubric.NotMeasured, rubric.CategoryPreconditionUnmet, reason + notAViolation(ids, id)
	case command.IsTimeout(err):
		return rubric.Failed, rubric.CategoryNone, "timed out: " + reason
	}
	return rubric.Failed, rubric.CategoryNone, reason
}

// OthersOf are the entries of ids that fail on any failure of the submission.
func OthersOf(ids []string) []string {
	var out []string
	for _, id := range ids {
		if !FailsOnlyOnViolation(id) {
			out = append(out, id)
		}
	}
	return out
}

// whoFails names, for the reason of an entry left not measured, the entries
// of the same scenario that fail for the submission's failure ("" if none).
func whoFails(ids []string) string {
	others := OthersOf(ids)
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
	others := OthersOf(ids)
	if len(others) == 0 {
		return " (not a security property: the security check could not be made; the entries that grade this fail for it)"
	}
	verb := "fails"
	if len(others) > 1 {
		verb = "fail"
	}
	return fmt.Sprintf(" (not a security property: %s is not measured by this scenario; %s %s for it)", id, strings.Join(others, ", "), verb)
}

// No points for what never ran: an entry passes only when its
// central property (rubric.CentralProperty) was exercised. The rule is made
// here, once, and applied where a scenario whose steps all passed is
// recorded (the steps' recordOutcome): a scenario that ran the subject but whose runs
// did not do what the entry's central property needs records that entry not
// measured, with the reason, never passed. A failed or not-measured outcome
// is never changed. Entries whose scenarios make their own evidence (the
// contract check, the submission's tests, a reviewer) and scenarios that
// ran no subject are left to their own checks.

// Exercise is what a scenario's subject runs did, as the server (or, on a
// real target, the recording proxy) saw it with their own keys.
type Exercise struct {
	Runs      int // subject runs the scenario made or used
	Attempted int // create requests made (refused ones too)
	Created   int // sandboxes created
	Used      int // of those, sandboxes in which a command ran or a file was written or read
	Model     int // requests to the scripted model (agent runs)
	Exits     []int
	// Unknown, when not "", says why what the runs did could not be read
	// (the audit trail failed): the harness's fault.
	Unknown string
}

// PassStands decides, for entry id passed by a scenario whose runs
// did x, whether the pass stands. It returns ok true when it does (the
// property was exercised, or the rule does not apply: no subject run, an
// entry that makes its own evidence); otherwise the verdict, category and
// reason the entry gets instead.
func PassStands(id string, x *Exercise) (ok bool, v rubric.Verdict, cat rubric.Category, reason string) {
	if x == nil || x.Runs == 0 {
		return true, "", "", ""
	}
	c, known := rubric.CentralOf(rubric.ID(id))
	if !known {
		// An entry without a central property is a bug of the rubric
		// (TestEveryEntryHasACentralProperty); never a pass on nothing.
		return false, rubric.HarnessError, rubric.CategoryNone, "harness error: entry " + id + " has no central property in the rubric"
	}
	switch c.Needs {
	case rubric.ExerciseSandboxUsed, rubric.ExerciseCreateAttempted:
	default:
		return true, "", "", ""
	}
	exited := exitsOf(x.Exits)
	switch {
	case c.Needs == rubric.ExerciseCreateAttempted && (x.Attempted > 0 || x.Model > 0):
		return true, "", "", ""
	case c.Needs == rubric.ExerciseSandboxUsed && x.Used > 0:
		return true, "", "", ""
	case x.Unknown != "":
		// What a run did could not be read: the harness's fault, never a
		// pass on nothing and never the submission's.
		return false, rubric.HarnessError, rubric.CategoryNone,
			"harness error: whether the run exercised " + id + "'s central property (" + c.Property + ") could not be read: " + x.Unknown
	case c.Needs == rubric.ExerciseCreateAttempted:
		return false, rubric.NotMeasured, rubric.CategoryPreconditionUnmet, fmt.Sprintf(
			"not exercised: the subject never asked for a sandbox (nor the model) (%s), so %s's central property (%s) was not exercised; nothing of it was measured",
			exited, id, c.Property)
	case x.Created == 0:
		return false, rubric.NotMeasured, rubric.CategoryPreconditionUnmet, fmt.Sprintf(
			"not exercised: the subject created no sandbox (%s), so %s's central property (%s) was not exercised; what passed here measured nothing of it",
			exited, id, c.Property)
	}
	return false, rubric.NotMeasured, rubric.CategoryPreconditionUnmet, fmt.Sprintf(
		"not exercised: the subject created %d sandbox(es) but ran no command and moved no file in any (%s), so %s's central property (%s) was not exercised; what passed here measured nothing of it",
		x.Created, exited, id, c.Property)
}

// exitsOf says how the runs exited: "it exited 1", "they exited 0, 0, 1".
func exitsOf(exits []int) string {
	switch len(exits) {
	case 0:
		return "it did not finish"
	case 1:
		return fmt.Sprintf("it exited %d", exits[0])
	}
	parts := make([]string, len(exits))
	for i, c := range exits {
		parts[i] = fmt.Sprint(c)
	}
	return "they exited " + strings.Join(parts, ", ")
}

// Add counts what one run did with its own key (saw: what the target saw of
// it; endpointCalls: on a real target, the execd calls its recording proxy
// saw, which show a sandbox used; bundled: the target has an audit).
func (x *Exercise) Add(saw command.Saw, endpointCalls []command.Call, bundled bool) {
	created := map[string]bool{}
	for _, id := range saw.Created {
		created[id] = true
	}
	x.Created += len(created)
	for _, ev := range saw.Calls {
		if lc := ev.Lifecycle; lc != nil && lc.Method == "POST" && command.IsCreatePath(lc.Path) {
			x.Attempted++
		}
	}
	used := map[string]bool{}
	for _, ev := range saw.Events {
		if !created[ev.SandboxID] {
			continue
		}
		switch {
		case ev.Kind == "command" && ev.Command != nil,
			ev.Kind == "file" && ev.File != nil && ev.File.Op != "final-manifest":
			used[ev.SandboxID] = true
		}
	}
	if !bundled {
		// A real target: the recording proxy saw the run's execd calls.
		for _, c := range endpointCalls {
			if created[c.SandboxID] {
				used[c.SandboxID] = true
			}
		}
	}
	x.Used += len(used)
}
