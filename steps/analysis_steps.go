package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/subfile"

	"github.com/osb-capstone/acceptance/harness/recompute"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// M2 accuracy and the evidence chain: the harness's own recomputation, and
// (bundled server) the subject's claims checked against the audit trail.

func registerAnalysisSteps(sc registrar) {
	sc.Step(`^the subject claims at least (\d+) key numbers$`, claimsAtLeast)
	sc.Step(`^the claimed row count matches the host recomputation$`, rowCountMatches)
	sc.Step(`^every number the subject claims matches the host recomputation$`, claimsMatch)
	sc.Step(`^every number the subject claims appears in report\.md$`, claimsInReport)
	sc.Step(`^the sandbox id in the summary is one the subject created$`, sandboxInAudit)
	sc.Step(`^every step the summary claims ran in that sandbox with the claimed exit code$`, stepsRan)
	sc.Step(`^the input uploaded to the sandbox has the fixture's sha256$`, inputHashMatches)
	sc.Step(`^the sandbox was deleted and a later GET answers 404$`, sandboxGone)
	sc.Step(`^the subject exited non-zero or reported 0 rows$`, failedOrZeroRows)
	sc.Step(`^if it failed, the summary shows the sandbox's stderr and an error class$`, failureVisible)
}

// summarized returns the run with a usable summary.json.
func summarized(ctx context.Context) (*scenario, *subjectRun, error) {
	s, r, err := ran(ctx)
	if err != nil {
		return s, r, err
	}
	if r.sum == nil {
		return s, r, failf("no usable summary.json: %v", r.sumErr)
	}
	return s, r, nil
}

func claimsAtLeast(ctx context.Context, n int) error {
	_, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	if len(r.sum.Metrics) < n {
		return failf("summary.json claims %d key numbers, the course asks for at least %d", len(r.sum.Metrics), n)
	}
	return nil
}

func rowCountMatches(ctx context.Context) error {
	s, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	if r.statsErr != nil {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the harness could not read the input itself: %v", r.statsErr)
	}
	claimed, ok := r.sum.Metrics["rows"]
	if !ok {
		return failf("summary.json metrics claim no \"rows\"; the row count is the first number the course recomputes")
	}
	c := r.stats.CompareOne("rows", claimed)
	s.addEvidence(writeComparisons(s, r, "rows", []recompute.Comparison{c}))
	if !c.Match {
		return failf("claimed rows %v, the harness counts %d (%s)", claimed, r.stats.Rows, c.Hint)
	}
	return nil
}

func claimsMatch(ctx context.Context) error {
	s, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	if r.statsErr != nil {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the harness could not read the input itself: %v", r.statsErr)
	}
	cmp := r.stats.Compare(r.sum.Metrics)
	s.addEvidence(writeComparisons(s, r, "all", cmp))
	var bad, unverifiable []string
	verified := 0
	for _, c := range cmp {
		switch c.Status {
		case recompute.StatusMatch:
			verified++
		case recompute.StatusMismatch:
			if c.Name == "rows" { // the number the course recomputes first, worded as the row-count step words it
				bad = append([]string{fmt.Sprintf("claimed rows %v, the harness counts %d (%s)", c.Claimed, r.stats.Rows, c.Hint)}, bad...)
				continue
			}
			bad = append(bad, fmt.Sprintf("%s: claimed %v, recomputed %v (%s)", c.Name, c.Claimed, deref(c.Recomputed), c.Hint))
		default:
			unverifiable = append(unverifiable, c.Name)
		}
	}
	if len(bad) > 0 {
		return failf("%d claimed numbers differ from the host recomputation: %s", len(bad), strings.Join(bad, "; "))
	}
	if verified < 2 {
		return failf("only %d claimed numbers could be recomputed (unverifiable: %s); the course needs at least two",
			verified, strings.Join(unverifiable, ", "))
	}
	s.note("%d claims verified", verified)
	if len(unverifiable) > 0 {
		s.note("not recomputable: %s", strings.Join(unverifiable, ", "))
	}
	return nil
}

func claimsInReport(ctx context.Context) error {
	s, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	text, err := subfile.Read(filepath.Join(r.OutDir, "report.md"), "{out}/report.md", subfile.ReportMD)
	if err != nil {
		return failf("%v", err)
	}
	checks := recompute.CheckReport(string(text), r.sum.Metrics)
	b, _ := json.MarshalIndent(checks, "", "  ")
	s.addEvidence(s.env.writeEvidence("accuracy", "report-numbers-"+r.key+".json", b))
	var missing []string
	for _, c := range checks {
		if !c.Found {
			missing = append(missing, fmt.Sprintf("%s=%v", c.Name, c.Claimed))
		}
	}
	if len(missing) > 0 {
		return failf("claimed numbers not found in report.md: %s", strings.Join(missing, ", "))
	}
	return nil
}

func writeComparisons(s *scenario, r *subjectRun, what string, cmp []recompute.Comparison) string {
	b, _ := json.MarshalIndent(map[string]any{
		"input":       map[string]any{"sha256": r.stats.SHA256, "bytes": r.stats.Bytes, "lines": r.stats.Lines, "encoding": r.stats.Encoding, "delimiter": r.stats.Delimiter, "bom": r.stats.BOM},
		"comparisons": cmp,
		"tolerance":   "relative 1e-6 or absolute 1e-9 (harness/recompute.Equal)",
	}, "", "  ")
	return s.env.writeEvidence("accuracy", "recompute-"+r.key+"-"+what+".json", b)
}

func deref(p *float64) any {
	if p == nil {
		return "n/a"
	}
	return *p
}

// audited returns the run with its audit trail, or "not measured" on a real server.
func audited(ctx context.Context) (*scenario, *subjectRun, command.Saw, error) {
	s, r, err := summarized(ctx)
	if err != nil {
		return s, r, command.Saw{}, err
	}
	if !s.env.mock() {
		return s, r, command.Saw{}, notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
			"target %s has no audit trail; checking the subject's claims against what really ran needs the bundled server", s.env.opt.Target.Kind)
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return s, r, saw, harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"))
	return s, r, saw, nil
}

// lifecycleSeen returns the run with the lifecycle calls its sandboxes saw:
// from the bundled server's audit, or from the harness's recording proxy in
// front of a server without one.
func lifecycleSeen(ctx context.Context) (*scenario, *subjectRun, command.Saw, error) {
	s, r, err := summarized(ctx)
	if err != nil {
		return s, r, command.Saw{}, err
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return s, r, saw, harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"))
	return s, r, saw, nil
}

func sandboxInAudit(ctx context.Context) error {
	_, r, saw, err := lifecycleSeen(ctx)
	if err != nil {
		return err
	}
	for _, id := range saw.Created {
		if id == r.sum.SandboxID {
			return nil
		}
	}
	return failf("summary.json names sandbox %q, but the subject created %v", r.sum.SandboxID, saw.Created)
}

func stepsRan(ctx context.Context) error {
	_, r, saw, err := audited(ctx)
	if err != nil {
		return err
	}
	if len(r.sum.Steps) == 0 {
		return failf("summary.json lists no steps")
	}
	var bad []string
	for _, st := range r.sum.Steps {
		if st.ExitCode == nil {
			continue // claimed as never finished
		}
		found, codes := false, []string{}
		for _, ev := range saw.Events {
			if ev.Kind != "command" || ev.Command == nil || ev.SandboxID != r.sum.SandboxID || ev.Command.Command != st.Command {
				continue
			}
			codes = append(codes, intPtrString(ev.Command.ExitCode))
			if ev.Command.ExitCode != nil && *ev.Command.ExitCode == *st.ExitCode {
				found = true
			}
		}
		if !found {
			if len(codes) == 0 {
				bad = append(bad, fmt.Sprintf("step %q (%q) never ran in %s", st.Name, clip(st.Command, 80), r.sum.SandboxID))
			} else {
				bad = append(bad, fmt.Sprintf("step %q claims exit %d, the audit saw %s", st.Name, *st.ExitCode, strings.Join(codes, ",")))
			}
		}
	}
	if len(bad) > 0 {
		return failf("claims not backed by the audit: %s", strings.Join(bad, "; "))
	}
	return nil
}

func inputHashMatches(ctx context.Context) error {
	_, r, saw, err := audited(ctx)
	if err != nil {
		return err
	}
	if r.stats == nil {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the harness could not hash the input: %v", r.statsErr)
	}
	var seen []string
	for _, ev := range saw.Events {
		if ev.Kind == "file" && ev.File != nil && ev.File.Op == "upload" {
			if ev.File.SHA256 == r.stats.SHA256 {
				return nil
			}
			seen = append(seen, ev.File.Path+"="+clip(ev.File.SHA256, 12))
		}
	}
	return failf("no upload had the input's sha256 %s (uploads: %s)", clip(r.stats.SHA256, 12), strings.Join(seen, ", "))
}

func sandboxGone(ctx context.Context) error {
	s, r, saw, err := lifecycleSeen(ctx)
	if err != nil {
		return err
	}
	// Only a DELETE made with this run's own key counts (attempts are its
	// calls, by identity): the grader's clean-up or another caller deleting
	// the sandbox is not the subject destroying it.
	deleted := false
	for _, ev := range saw.Calls {
		if ev.SandboxID == r.sum.SandboxID && ev.Lifecycle != nil &&
			ev.Lifecycle.Method == "DELETE" && ev.Lifecycle.Status == 204 {
			deleted = true
		}
	}
	if !deleted {
		return failf("no successful DELETE of %s with the run's key was seen", r.sum.SandboxID)
	}
	c, cancel := ctxTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.env.client.GetSandbox(c, r.sum.SandboxID)
	if err != nil {
		return harnessf("the harness's GET of the subject's sandbox: %v", err)
	}
	if res.Status != 404 {
		return failf("GET of the subject's sandbox answered %d after its delete, want 404", res.Status)
	}
	return nil
}

func failedOrZeroRows(ctx context.Context) error {
	_, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if r.Res.ExitCode != 0 {
		return nil
	}
	if r.sum != nil {
		if rows, ok := r.sum.Metrics["rows"]; ok && rows == 0 {
			return nil
		}
	}
	claimed := "no row count"
	if r.sum != nil {
		if rows, ok := r.sum.Metrics["rows"]; ok {
			claimed = fmt.Sprintf("%v rows", rows)
		}
	}
	return failf("the subject exited 0 on %s and its summary claims %s: it must either fail visibly or report 0 rows", brokenInput(r.fixture), claimed)
}

// brokenInput says what is wrong with a broken-input fixture, for reasons.
func brokenInput(fixture string) string {
	switch strings.TrimSuffix(fixture, ".csv") {
	case "header_only":
		return "a header-only CSV (no data rows)"
	case "empty":
		return "an empty file (no header, no rows)"
	case "malformed":
		return "a malformed CSV (a row with more fields than its header)"
	}
	return "the broken input " + fixture
}

func failureVisible(ctx context.Context) error {
	_, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if r.Res.ExitCode == 0 {
		return nil
	}
	if r.sum == nil {
		return failf("the subject failed without a usable summary.json: %v", r.sumErr)
	}
	if r.sum.Error == nil || r.sum.Error.Class == "" {
		return failf("the subject failed but summary.json has no error class")
	}
	for _, st := range r.sum.Steps {
		if st.ExitCode != nil && *st.ExitCode != 0 && strings.TrimSpace(st.Stderr) != "" {
			return nil
		}
	}
	if r.sum.Error.Class == "input_error" && r.sum.Error.Message != "" {
		return nil // rejected on the host before any sandbox step, with a message
	}
	return failf("the subject failed (%s) but no failed step shows the sandbox's stderr", r.sum.Error.Class)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
