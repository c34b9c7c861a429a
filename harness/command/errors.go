package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/osb-capstone/acceptance/harness/inert"
)

// A step error's text reaches godog.log, the console and every report: it
// is one inert line (inert.Line), whatever of the submission's text its
// arguments carry. The error it wraps stays reachable (errors.Is/As).
type lineError struct {
	err error
	msg string
}

func (e *lineError) Error() string { return e.msg }
func (e *lineError) Unwrap() error { return e.err }

// Errorf is fmt.Errorf whose text is one inert line.
func Errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if inert.Clean(err.Error()) {
		return err
	}
	return &lineError{err: err, msg: inert.Line(err.Error())}
}

// HarnessFault is an error that is the harness's or the target's, never the
// submission's.
type HarnessFault struct{ Err error }

func (h *HarnessFault) Error() string { return h.Err.Error() }
func (h *HarnessFault) Unwrap() error { return h.Err }

// Harnessf is an error of the harness or the target.
func Harnessf(format string, args ...any) error {
	return &HarnessFault{Err: Errorf(format, args...)}
}

// IsHarnessFault reports whether err is the harness's or the target's: a
// HarnessFault in its chain, or a fault of the grader's own machine
// (GraderFault).
func IsHarnessFault(err error) bool {
	var h *HarnessFault
	return errors.As(err, &h) || GraderFault(err) != ""
}

// NotMeasured is a check that cannot measure what it should: its entries are
// not measured, with Category (a rubric.Category) and Reason, never passed
// and never failed. A judgement of the harness returns it; the steps record
// it for the scenario (godog knows only "skipped" and drops the reason).
type NotMeasured struct {
	Category string
	Reason   string
}

func (n *NotMeasured) Error() string { return "not measured (" + n.Category + "): " + n.Reason }

// NotMeasuredf is a NotMeasured with its reason formatted.
func NotMeasuredf(category, format string, args ...any) error {
	return &NotMeasured{Category: category, Reason: fmt.Sprintf(format, args...)}
}

// Violation is the submission's failure of a security property (or of D1's
// bounded retries): it fails every entry of its scenario.
type Violation struct{ Err error }

func (v *Violation) Error() string { return v.Err.Error() }
func (v *Violation) Unwrap() error { return v.Err }

// Violationf is a Violation.
func Violationf(format string, args ...any) error {
	return &Violation{Err: Errorf(format, args...)}
}

// IsViolation reports whether err is a Violation (and not the grader's own
// fault, which no submission can be blamed for).
func IsViolation(err error) bool {
	var v *Violation
	return errors.As(err, &v) && !IsHarnessFault(err)
}

// Failf is the submission's failure. An error argument that is a fault of
// the grader's own machine makes it a harness error instead (GraderFault):
// a step that fails with "reading {out}/summary.json: too many open files"
// blames the grader, not the submission.
func Failf(format string, args ...any) error {
	for _, a := range args {
		if err, ok := a.(error); ok && GraderFault(err) != "" {
			return Harnessf(format, args...)
		}
	}
	return Errorf(format, args...)
}

// The command's own outcomes that are neither the harness's nor a failure
// of the submission's code.
var (
	// ErrSubjectTimedOut: the command ran past its wall-clock limit and was
	// killed. A timeout never earns points.
	ErrSubjectTimedOut = errors.New("the subject ran past its wall-clock limit and was killed")
	// ErrBudgetSpent: the submission's command time (--submission-timeout)
	// was used up by its earlier commands, so this one never started. What
	// it would have shown is not measured (it earns nothing): on a loaded
	// grader the budget can run out through no fault of the submission's,
	// and the commands that did run past their own limits fail for that
	// already.
	ErrBudgetSpent = errors.New("not started: the submission's commands had used all of its command time")
)

// IsTimeout reports whether err says a deadline passed.
func IsTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrSubjectTimedOut)
}

// graderErrnos are the grader's own machine running out of something.
var graderErrnos = []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.ENOSPC}

// GraderFault names a fault of the grader's own machine in err's chain
// ("" if none): out of descriptors (EMFILE, ENFILE), memory (ENOMEM) or
// disk (ENOSPC), or a fork or exec of the grader's that failed (an
// exec.Error, a "fork/exec" error). Such an error is a harness error
// wherever it surfaces.
func GraderFault(err error) string {
	if err == nil {
		return ""
	}
	for _, n := range graderErrnos {
		if errors.Is(err, n) {
			return "the grader's machine ran out (" + n.Error() + ")"
		}
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return "the grader could not start a process (" + ee.Err.Error() + ")"
	}
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "fork/exec" {
		return "the grader could not start a process (fork/exec: " + pe.Err.Error() + ")"
	}
	return ""
}
