package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
)

// invocation is one run of one of the submission's other entry points
// (contract, reap, test.unit, test.integration), with its own API key so
// the server's audit (or the recording proxy on a real target) attributes
// every call it made.
type invocation struct {
	launch
	name string // evidence name

	auditOnce sync.Once
	auditErr  error
	calls     []osb.AuditEvent // lifecycle calls with this invocation's key
	keyless   []osb.AuditEvent // lifecycle calls without a key while it ran
	audit     []osb.AuditEvent // every event of the sandboxes it created
	created   []string         // sandboxes it created
}

// invoke runs one of the submission's commands (Env.launch): working
// directory the submission, the subject environment with a fresh key, {out}
// an empty directory in the evidence. runID is CAPSTONE_RUN_ID (reap gets
// the killed run's).
func (e *Env) invoke(ctx context.Context, field, cmd, name, runID string, timeout time.Duration) *invocation {
	relDir := "evidence"
	for _, seg := range strings.Split(e.repKey(name), "/") {
		relDir = filepath.Join(relDir, sanitize(seg))
	}
	inv := &invocation{launch: e.newLaunch(field, relDir, runID), name: name}
	if field == "contract" && e.mock() {
		// A keyless request carries no key to attribute it by: the contract
		// check runs alone on the shared server (no other scenario's or
		// submission's command meanwhile), so every keyless request in its
		// window is its own.
		e.faultMu.Lock()
		defer e.faultMu.Unlock()
	} else {
		e.faultMu.RLock() // no server-wide fault of another scenario or submission meanwhile
		defer e.faultMu.RUnlock()
	}
	e.launch(ctx, &inv.launch, launchOpts{cmd: cmd, timeout: timeout,
		progress: fmt.Sprintf("  … running the submission's %s command", field)})
	if !inv.launched() {
		return inv
	}
	fields := map[string]any{"field": field, "command": cmd, "run_id": runID}
	if inv.model != nil {
		fields["model_script"] = inv.model.scriptName
	}
	inv.writeRecord("invocation.json", fields)
	return inv
}

// evidence lists the invocation's evidence files (its logs only when it
// printed something).
func (inv *invocation) evidence(names ...string) []string {
	out := []string{filepath.Join(inv.relDir, "invocation.json")}
	for _, log := range []string{"stdout.log", "stderr.log", "model-dialogue.md", "model-transcript.jsonl"} {
		if st, err := os.Stat(filepath.Join(inv.dir, log)); err == nil && st.Size() > 0 {
			out = append(out, filepath.Join(inv.relDir, log))
		}
	}
	for _, n := range names {
		out = append(out, filepath.Join(inv.relDir, n))
	}
	return out
}

// usable says why the invocation's outcome cannot be judged, if so.
func (inv *invocation) usable() error {
	switch {
	case inv.err != nil: // the harness's or the target's, never the submission's (blame.go)
		return harnessf("the harness could not run the submission's %s command: %v", inv.field, inv.err)
	case inv.res == nil:
		return harnessf("the submission's %s command did not run", inv.field)
	case inv.budgetSpent:
		return fmt.Errorf("%w (%s) before its %s command; grade again with a larger --submission-timeout to measure it", errBudgetSpent, inv.budget(), inv.field)
	case inv.res.TimedOut:
		return fmt.Errorf("%w: the submission's %s command ran past %s", errSubjectTimedOut, inv.field, inv.res.Duration.Round(time.Second))
	}
	return nil
}

// invocationUsable is usable, plus the rules Env.usable applies to a subject
// run: a command that exited non-zero after the target answered one of its
// creates (by its key) with a server error no drill injected, or after one
// of its sandboxes vanished with no DELETE from anyone (vanish.go), failed
// because of the target, not the submission (blame.go). An audit that cannot be read
// names no such create; the step that needs the audit reports that.
func (e *Env) invocationUsable(ctx context.Context, inv *invocation) error {
	if err := inv.usable(); err != nil || inv.res.ExitCode == 0 {
		return err
	}
	if why := brokenByGrader(inv.res); why != "" {
		return harnessf("%s, and the submission's %s command then exited %d: a fault of the grader, not of the submission", why, inv.field, inv.res.ExitCode)
	}
	if e.loadInvocationAudit(ctx, inv) != nil {
		return nil
	}
	if why := createFailedByServer(inv.calls); why != "" {
		return harnessf("the target failed a create of the submission's %s command (%s), and the command then exited %d: a fault of the target, not of the submission",
			inv.field, why, inv.res.ExitCode)
	}
	if fate := e.opt.Target.SandboxFate; fate != nil {
		// A sandbox of the command's own that vanished with no DELETE from
		// anyone (vanish.go): the machine's or the target's doing.
		vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		if why := vanishedUnexplained(vctx, inv.observed, "", fate); why != "" {
			return harnessf("%s; the submission's %s command then exited %d: a fault of the target or the machine, not of the submission", why, inv.field, inv.res.ExitCode)
		}
	}
	return nil
}

// loadAudit collects what the server saw of the invocation: its lifecycle
// calls (by key), keyless calls while it ran, and the events of the
// sandboxes it created. Against a real target: the recording proxy's calls.
func (e *Env) loadInvocationAudit(ctx context.Context, inv *invocation) error {
	inv.auditOnce.Do(func() {
		var sh keyShare
		if e.mock() {
			var err error
			if sh, err = e.fetchKeyShare(ctx, inv.keyFP); err != nil {
				inv.auditErr = err
				return
			}
			if inv.keyless, err = e.keylessCalls(ctx, inv.auditSince, inv.started, inv.ended); err != nil {
				inv.auditErr = err
				return
			}
		} else {
			var events []osb.AuditEvent
			for _, c := range inv.observed {
				events = append(events, osb.AuditEvent{Time: c.Time, SandboxID: c.SandboxID, Kind: "lifecycle", Lifecycle: &osb.AuditLifecycle{
					Method: c.Method, Path: c.Path, Status: c.Status, KeyFingerprint: c.KeyFingerprint, Body: c.Body}})
			}
			sh = shareOf(events, inv.keyFP)
			for _, ev := range events {
				if ev.Lifecycle.KeyFingerprint == "" && !ev.Time.Before(inv.started) && !ev.Time.After(inv.ended) {
					inv.keyless = append(inv.keyless, ev)
				}
			}
		}
		inv.calls, inv.created, inv.audit = sh.calls, sh.created, sh.events
		b, _ := json.MarshalIndent(map[string]any{"calls_with_its_key": inv.calls, "keyless_calls_while_it_ran": inv.keyless, "sandbox_events": inv.audit}, "", "  ")
		_ = os.WriteFile(filepath.Join(inv.dir, "server-saw.json"), b, 0o644)
	})
	return inv.auditErr
}

// osbEvent is an audit event (short name for the checks).
type osbEvent = osb.AuditEvent
