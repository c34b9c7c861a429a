package steps

import "github.com/osb-capstone/acceptance/harness/command"

// Who a step error blames: the typed errors are harness/command's (its
// package doc); these are the steps' short names for them. blame.go decides
// what each means for an entry.

// harnessf is a step error of the harness or the target, never the submission's.
func harnessf(format string, args ...any) error { return command.Harnessf(format, args...) }

// violationf is the submission's failure of a security property (or of
// D1's bounded retries): it fails every entry of the scenario.
func violationf(format string, args ...any) error { return command.Violationf(format, args...) }

// failf is the submission's failure (a fault of the grader's own machine
// among its arguments makes it a harness error: command.Failf).
func failf(format string, args ...any) error { return command.Failf(format, args...) }

// isHarnessFault reports whether err is the harness's (or the grader's machine's).
func isHarnessFault(err error) bool { return command.IsHarnessFault(err) }

// isViolation reports whether err is a violated security property.
func isViolation(err error) bool { return command.IsViolation(err) }

// isTimeout reports whether err says a deadline passed: a timeout never earns points.
func isTimeout(err error) bool { return command.IsTimeout(err) }

var (
	errSubjectTimedOut = command.ErrSubjectTimedOut
	errBudgetSpent     = command.ErrBudgetSpent
)
