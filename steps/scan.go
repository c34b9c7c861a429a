package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/secretscan"
)

// Every subject run is scanned for planted secrets (harness/secretscan says
// where and how); a leak on any run fails credential and M3, naming the run
// and the file.

// secretLeaks scans every file of the run (secretscan.Leaks): each finding
// names the secret and the file (relative to the bundle); scanned counts the
// files read.
func (e *Env) secretLeaks(r *subjectRun) (found []string, scanned int) {
	return secretscan.Leaks(secretscan.Files(r.Res, r.OutDir), secretscan.Secrets(r.APIKey, e.opt.Target.APIKey, e.opt.Stubs.DataAPIToken), e.opt.BundleDir)
}

// scanRunsOf scans, once per run, every subject run a finished scenario
// made or used. A leak fails credential and M3 with an outcome of its own
// (its scenario names the run); a clean run records nothing: the credential
// scenarios say what passed.
func (e *Env) scanRunsOf(s *scenario) {
	runs := append([]*subjectRun(nil), s.runs...)
	if s.run != nil && !containsRun(runs, s.run) {
		runs = append(runs, s.run)
	}
	for _, r := range runs {
		if r == nil || r.Res == nil {
			continue
		}
		if _, done := e.scanned.LoadOrStore(r, true); done {
			continue
		}
		func() {
			found, _ := e.secretLeaks(r)
			if len(found) == 0 {
				return
			}
			reason := fmt.Sprintf("run %q (fixture %s) leaked secrets into what it wrote or printed: %s",
				r.key, r.fixture, strings.Join(found, "; "))
			for _, id := range []rubric.ID{rubric.Credential, rubric.M3} {
				o := rubric.Outcome{ID: id, Verdict: rubric.Failed, Scenario: "secret scan of run " + r.key,
					Reason: reason, Evidence: r.evidence()}
				if err := e.opt.Results.Record(o); err != nil {
					e.progress("  ! could not record the secret scan of %s: %v", r.key, err)
				}
			}
			e.progress("%-13s secret scan of run %s  [credential, M3]\n              %s", string(rubric.Failed), r.key, printable(reason))
		}()
	}
}

// sandboxScanKey marks a run whose sandboxes were checked for planted
// secrets (in Env.scanned, beside the runs whose files were).
type sandboxScanKey struct{ r *subjectRun }

// scanSandboxesOf checks, once per run, what the bundled server saw inside
// and around the sandboxes of every subject run a finished scenario made or
// used, in every scenario, the agent's included (the @agent scenarios have
// no step of their own for it, so an agent that put the keys in its
// sandbox's env would otherwise pass them):
//   - planted secrets in a sandbox's environment, process list or files;
//   - a call of a sandbox to the data API that the vault gave no credential.
//
// Either fails credential and M3 with an outcome of its own ("sandbox scan
// of run …"); the plain credential scenarios make the same checks as steps.
// A clean run records nothing; a sandbox that cannot be scanned is left to
// the credential scenario's own step (not measured there). Only the bundled
// server scans sandboxes and records what its gateway forwarded.
func (e *Env) scanSandboxesOf(ctx context.Context, s *scenario) {
	if !e.mock() {
		return
	}
	runs := append([]*subjectRun(nil), s.runs...)
	if s.run != nil && !containsRun(runs, s.run) {
		runs = append(runs, s.run)
	}
	for _, r := range runs {
		if r == nil || r.Res == nil {
			continue
		}
		if _, done := e.scanned.LoadOrStore(sandboxScanKey{r}, true); done {
			continue
		}
		saw, err := r.Saw(ctx)
		if err != nil || len(saw.Created) == 0 {
			continue // an unreadable audit is the scenario's steps' harness error
		}
		var what []string
		if found, _, _ := secretscan.InSandboxes(ctx, e.client, saw); len(found) > 0 {
			what = append(what, "planted secrets found inside its sandbox: "+strings.Join(found, "; "))
		}
		what = append(what, secretscan.DataAPIWithoutVault(saw, e.dataAPIHost())...)
		if len(what) == 0 {
			continue
		}
		reason := fmt.Sprintf("run %q (fixture %s): %s", r.key, r.fixture, strings.Join(what, "; "))
		for _, id := range []rubric.ID{rubric.Credential, rubric.M3} {
			o := rubric.Outcome{ID: id, Verdict: rubric.Failed, Scenario: "sandbox scan of run " + r.key,
				Reason: reason, Evidence: append(r.evidence(), filepath.Join(r.RelDir, "audit.json"))}
			if err := e.opt.Results.Record(o); err != nil {
				e.progress("  ! could not record the sandbox scan of %s: %v", r.key, err)
			}
		}
		e.progress("%-13s sandbox scan of run %s  [credential, M3]\n              %s", string(rubric.Failed), r.key, printable(clip(reason, 400)))
	}
}

func containsRun(runs []*subjectRun, r *subjectRun) bool {
	for _, x := range runs {
		if x == r {
			return true
		}
	}
	return false
}
