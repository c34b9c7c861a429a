package reference

import (
	"fmt"
	"time"
)

// Stop reasons written to summary.json.
const (
	StopCompleted       = "completed"
	StopInputError      = "input_error"
	StopCreateFailed    = "create_failed"
	StopSandboxNotReady = "sandbox_not_ready"
	StopUploadFailed    = "upload_failed"
	StopInstallFailed   = "install_failed"
	StopAnalysisFailed  = "analysis_failed"
	StopArtifactFailed  = "artifact_missing"
	StopVerifyFailed    = "verification_failed"
	StopCleanupFailed   = "cleanup_unconfirmed"
	StopMaxSteps        = "max_steps"
	StopWallClock       = "wall_clock_budget"
	StopInterrupted     = "interrupted"
	StopSandboxGone     = "sandbox_gone"
	StopInternalError   = "internal_error"
)

// Budget bounds a run: how many commands it may run, how long each may take,
// and how long the whole run may take. It is plain data plus arithmetic, so it
// is easy to test; the pipeline asks it before every step.
type Budget struct {
	MaxSteps       int
	CommandTimeout time.Duration
	WallClock      time.Duration
	Start          time.Time
	steps          int
}

// BudgetError says which budget ended the run.
type BudgetError struct {
	StopReason string
	Message    string
}

func (e *BudgetError) Error() string { return e.Message }

// minStepTime is the least time worth starting a command with.
const minStepTime = 2 * time.Second

// BeginStep charges one step. It fails when the step budget is spent or too
// little wall-clock time is left to run a command at all.
func (b *Budget) BeginStep(now time.Time) error {
	if b.MaxSteps > 0 && b.steps >= b.MaxSteps {
		return &BudgetError{StopMaxSteps, fmt.Sprintf("step budget exhausted: %d of %d commands already run", b.steps, b.MaxSteps)}
	}
	if left := b.Remaining(now); left < minStepTime {
		return &BudgetError{StopWallClock, fmt.Sprintf("wall-clock budget of %s exhausted (%s left)", b.WallClock, left.Round(time.Millisecond))}
	}
	b.steps++
	return nil
}

// Steps is how many steps were charged.
func (b *Budget) Steps() int { return b.steps }

// Remaining is the wall-clock time left (never negative).
func (b *Budget) Remaining(now time.Time) time.Duration {
	if b.WallClock <= 0 {
		return 1<<63 - 1
	}
	left := b.WallClock - now.Sub(b.Start)
	if left < 0 {
		return 0
	}
	return left
}

// CommandTimeoutAt returns the timeout for the next command: the per-command
// limit, or less if the wall clock has less left. limited reports whether the
// wall clock, not the per-command limit, is what bounds it.
func (b *Budget) CommandTimeoutAt(now time.Time) (d time.Duration, limited bool) {
	d = b.CommandTimeout
	if left := b.Remaining(now); d <= 0 || left < d {
		return left, true
	}
	return d, false
}

// Deadline is when the wall clock runs out (zero time if unbounded).
func (b *Budget) Deadline() time.Time {
	if b.WallClock <= 0 {
		return time.Time{}
	}
	return b.Start.Add(b.WallClock)
}
