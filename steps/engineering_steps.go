package steps

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// M4 engineering and M5 review.

// clipLimit is the course's output limit per step (clip(text, 8192)), plus room for its marker.
const clipLimit = 8192 + 64

func registerEngineeringSteps(sc registrar) {
	sc.Step(`^the subject's create request set a timeout of at most (\d+) seconds$`, createTimeoutBounded)
	sc.Step(`^the summary names a stop reason$`, stopReasonNamed)
	sc.Step(`^no step's recorded stdout or stderr exceeds 8192 bytes unless it is flagged truncated$`, outputsClipped)
	sc.Step(`^the subject finished within the harness's wall-clock limit$`, withinWallClock)
	sc.Step(`^every step in the summary has a name, a command, an exit code, a duration and a truncation flag$`, stepsStructured)
	sc.Step(`^the summary's sandbox id and duration are present$`, idAndDuration)
	sc.Step(`^a reviewer confirms the submission's README and test commands reproduce the run$`, reviewerREADME)
	sc.Step(`^the submission's unit and integration tests are run$`, runTests)
	sc.Step(`^they passed with at least (\d+) unit test and (\d+) integration test$`, testsPassed)
	sc.Step(`^the submission's README exists, fits one page and names its commands$`, readmeFits)
	sc.Step(`^the run's measured figures are recorded as evidence for the cost estimate$`, costFigures)
	sc.Step(`^a reviewer judges the submission's cost and delay estimate$`, reviewerCost)
	sc.Step(`^a reviewer judges the answers to the defense questions$`, reviewerDefense)
}

func createTimeoutBounded(ctx context.Context, max int) error {
	_, _, creates, err := subjectCreates(ctx)
	if err != nil {
		return err
	}
	for i, cr := range creates {
		if cr.Timeout == nil {
			return failf("create request %d sets no timeout: a crashed orchestrator leaves the sandbox forever", i+1)
		}
		if *cr.Timeout > max {
			return failf("create request %d sets a timeout of %ds, more than %ds", i+1, *cr.Timeout, max)
		}
	}
	return nil
}

func stopReasonNamed(ctx context.Context) error {
	_, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	if strings.TrimSpace(r.sum.StopReason) == "" {
		return failf("summary.json has an empty stop_reason")
	}
	return nil
}

func outputsClipped(ctx context.Context) error {
	s, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	for _, st := range r.sum.Steps {
		if len(st.Stdout) > clipLimit || len(st.Stderr) > clipLimit {
			return failf("step %q records %d bytes of stdout and %d of stderr; the limit is 8192 each", st.Name, len(st.Stdout), len(st.Stderr))
		}
	}
	if !s.env.mock() {
		return nil
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	// A step whose command really produced more than the limit must say it was cut.
	for _, st := range r.sum.Steps {
		for _, ev := range saw.Events {
			if ev.Kind == "command" && ev.Command != nil && ev.Command.Command == st.Command &&
				(ev.Command.StdoutBytes > 8192 || ev.Command.StderrBytes > 8192) && !st.Truncated {
				return failf("step %q produced %d/%d bytes but is not flagged truncated", st.Name, ev.Command.StdoutBytes, ev.Command.StderrBytes)
			}
		}
	}
	return nil
}

func withinWallClock(ctx context.Context) error {
	_, _, err := ran(ctx)
	return err // a timeout is reported by ran() and never passes
}

func stepsStructured(ctx context.Context) error {
	_, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	if len(r.sum.Steps) == 0 {
		return failf("summary.json records no steps")
	}
	for i, st := range r.sum.Steps {
		if strings.TrimSpace(st.Name) == "" || strings.TrimSpace(st.Command) == "" {
			return failf("step %d lacks a name or a command", i+1)
		}
		if st.ExitCode == nil && r.Res.ExitCode == 0 {
			return failf("step %q has no exit code in a run that succeeded", st.Name)
		}
		if st.DurationMs < 0 {
			return failf("step %q has a negative duration", st.Name)
		}
	}
	return nil
}

func idAndDuration(ctx context.Context) error {
	_, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	if r.sum.SandboxID == "" {
		return failf("summary.json has no sandbox_id")
	}
	if r.sum.DurationMs <= 0 {
		return failf("summary.json has duration_ms %d", r.sum.DurationMs)
	}
	return nil
}

func reviewerREADME(ctx context.Context) error {
	return notMeasured(ctx, string(rubric.CategoryReviewerJudgment),
		"whether another person can reproduce the run from the submission's README and test commands needs a reviewer; the harness ran the declared tests and checked the README's length and commands (scenario above)")
}

func costFigures(ctx context.Context) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	fig := map[string]any{
		"subject_wall_clock_ms": r.Res.Duration.Milliseconds(),
	}
	if r.stats != nil {
		fig["input_bytes"] = r.stats.Bytes
		fig["input_rows"] = r.stats.Rows
	}
	if r.sum != nil {
		fig["summary_duration_ms"] = r.sum.DurationMs
		var steps []map[string]any
		for _, st := range r.sum.Steps {
			steps = append(steps, map[string]any{"name": st.Name, "duration_ms": st.DurationMs})
		}
		fig["steps"] = steps
	}
	if s.env.mock() {
		if saw, err := r.Saw(ctx); err == nil {
			var created, deleted time.Time
			var cmdMs, upBytes, downBytes int64
			for _, ev := range saw.Events {
				switch {
				case ev.Kind == "lifecycle" && ev.Lifecycle != nil && ev.Lifecycle.Method == "POST" && isCreatePath(ev.Lifecycle.Path) && created.IsZero():
					created = ev.Time
				case ev.Kind == "lifecycle" && ev.Lifecycle != nil && ev.Lifecycle.Method == "DELETE":
					deleted = ev.Time
				case ev.Kind == "command" && ev.Command != nil:
					cmdMs += ev.Command.DurationMs
				case ev.Kind == "file" && ev.File != nil && ev.File.Op == "upload":
					upBytes += ev.File.Size
				case ev.Kind == "file" && ev.File != nil && ev.File.Op == "download":
					downBytes += ev.File.Size
				}
			}
			if !created.IsZero() && !deleted.IsZero() {
				fig["sandbox_lifespan_ms"] = deleted.Sub(created).Milliseconds()
			}
			fig["sandbox_command_ms"] = cmdMs
			fig["uploaded_bytes"] = upBytes
			fig["downloaded_bytes"] = downBytes
			fig["sandboxes_created"] = len(saw.Created)
		}
	}
	b, _ := json.MarshalIndent(fig, "", "  ")
	s.addEvidence(s.env.writeEvidence("cost", "measured-figures-"+r.key+".json", b))
	s.note("wall clock %s", r.Res.Duration.Round(time.Millisecond))
	return nil
}

func reviewerCost(ctx context.Context) error {
	return notMeasured(ctx, string(rubric.CategoryReviewerJudgment),
		"whether the submission explains its main cost items clearly is a reviewer's judgment; the run's measured figures are attached for comparison")
}

func reviewerDefense(ctx context.Context) error {
	return notMeasured(ctx, string(rubric.CategoryReviewerJudgment),
		"the defense questions (202 vs 200, TTL choice, vault placement, 429 vs 503, …) are answered to a reviewer, not to a harness")
}
