package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Who a step error blames: a fault of the harness or the target is never the
// student's failure.
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

// No points for what never ran: an entry passes only when its
// central property (rubric.CentralProperty) was exercised. The rule is made
// here, once, and applied where a scenario whose steps all passed is
// recorded (recordOutcome): a scenario that ran the subject but whose runs
// did not do what the entry's central property needs records that entry not
// measured, with the reason, never passed. A failed or not-measured outcome
// is never changed. Entries whose scenarios make their own evidence (the
// contract check, the submission's tests, a reviewer) and scenarios that
// ran no subject are left to their own checks.

// exercise is what a scenario's subject runs did, as the server (or, on a
// real target, the recording proxy) saw it with their own keys.
type exercise struct {
	runs      int // subject runs the scenario made or used
	attempted int // create requests made (refused ones too)
	created   int // sandboxes created
	used      int // of those, sandboxes in which a command ran or a file was written or read
	model     int // requests to the scripted model (agent runs)
	exits     []int
	// unknown, when not "", says why what the runs did could not be read
	// (the audit trail failed): the harness's fault.
	unknown string
}

// centralUnexercised decides, for entry id passed by a scenario whose runs
// did x, whether the pass stands. It returns ok true when it does (the
// property was exercised, or the rule does not apply: no subject run, an
// entry that makes its own evidence); otherwise the verdict, category and
// reason the entry gets instead.
func centralUnexercised(id string, x *exercise) (ok bool, v rubric.Verdict, cat rubric.Category, reason string) {
	if x == nil || x.runs == 0 {
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
	exited := exitsOf(x.exits)
	switch {
	case c.Needs == rubric.ExerciseCreateAttempted && (x.attempted > 0 || x.model > 0):
		return true, "", "", ""
	case c.Needs == rubric.ExerciseSandboxUsed && x.used > 0:
		return true, "", "", ""
	case x.unknown != "":
		// What a run did could not be read: the harness's fault, never a
		// pass on nothing and never the submission's.
		return false, rubric.HarnessError, rubric.CategoryNone,
			"harness error: whether the run exercised " + id + "'s central property (" + c.Property + ") could not be read: " + x.unknown
	case c.Needs == rubric.ExerciseCreateAttempted:
		return false, rubric.NotMeasured, rubric.CategoryPreconditionUnmet, fmt.Sprintf(
			"not exercised: the subject never asked for a sandbox (nor the model) (%s), so %s's central property (%s) was not exercised; nothing of it was measured",
			exited, id, c.Property)
	case x.created == 0:
		return false, rubric.NotMeasured, rubric.CategoryPreconditionUnmet, fmt.Sprintf(
			"not exercised: the subject created no sandbox (%s), so %s's central property (%s) was not exercised; what passed here measured nothing of it",
			exited, id, c.Property)
	}
	return false, rubric.NotMeasured, rubric.CategoryPreconditionUnmet, fmt.Sprintf(
		"not exercised: the subject created %d sandbox(es) but ran no command and moved no file in any (%s), so %s's central property (%s) was not exercised; what passed here measured nothing of it",
		x.created, exited, id, c.Property)
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

// exerciseOf reads what the subject runs of a finished scenario did with
// their own keys (nil when it ran none): the audit on the bundled server, the
// recording proxy's calls on a real target.
func (e *Env) exerciseOf(ctx context.Context, s *scenario) *exercise {
	runs := append([]*subjectRun(nil), s.runs...)
	if s.run != nil && !containsRun(runs, s.run) {
		runs = append(runs, s.run)
	}
	x := &exercise{}
	for _, r := range runs {
		if r == nil || r.Res == nil {
			continue
		}
		x.runs++
		x.exits = append(x.exits, r.Res.ExitCode)
		if r.model != nil {
			x.model += len(r.model.completions())
		}
		saw, err := r.Saw(ctx)
		if err != nil {
			x.unknown = fmt.Sprintf("reading the audit trail of run %s: %v", r.key, err)
			continue
		}
		created := map[string]bool{}
		for _, id := range saw.Created {
			created[id] = true
		}
		x.created += len(created)
		for _, ev := range saw.Calls {
			if lc := ev.Lifecycle; lc != nil && lc.Method == "POST" && isCreatePath(lc.Path) {
				x.attempted++
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
		if !e.mock() {
			// A real target: the recording proxy saw the run's execd calls.
			for _, c := range r.EndpointCalls {
				if created[c.SandboxID] {
					used[c.SandboxID] = true
				}
			}
		}
		x.used += len(used)
	}
	if x.runs == 0 {
		return nil
	}
	return x
}
