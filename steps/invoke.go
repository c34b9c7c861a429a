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

	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// invocation is one run of one of the submission's other entry points
// (contract, reap, test.unit, test.integration), with its own API key so
// the server's audit (or the recording proxy on a real target) attributes
// every call it made.
type invocation struct {
	field   string // manifest field
	name    string // evidence name
	relDir  string // evidence/<name>/
	dir     string
	outDir  string
	apiKey  string
	keyFP   string
	runID   string
	started time.Time
	ended   time.Time
	res     *subject.Result
	err     error       // the harness could not run it
	model   *agentModel // the plain scripted model of a submission with model: true (nil otherwise)

	observed []observe.Call

	auditOnce  sync.Once
	auditErr   error
	auditSince int64            // the server's audit cursor before it started
	calls      []osb.AuditEvent // lifecycle calls with this invocation's key
	keyless    []osb.AuditEvent // lifecycle calls without a key while it ran
	audit      []osb.AuditEvent // every event of the sandboxes it created
	created    []string         // sandboxes it created
}

// invoke runs one of the submission's commands: working directory the
// submission, the subject environment with a fresh key, {out} an empty
// directory in the evidence. runID is CAPSTONE_RUN_ID (reap gets the killed
// run's).
func (e *Env) invoke(ctx context.Context, field, cmd, name, runID string, timeout time.Duration) *invocation {
	inv := &invocation{field: field, name: name, runID: runID}
	inv.relDir = "evidence"
	for _, seg := range strings.Split(e.repKey(name), "/") {
		inv.relDir = filepath.Join(inv.relDir, sanitize(seg))
	}
	inv.dir = filepath.Join(e.opt.BundleDir, inv.relDir)
	inv.outDir = filepath.Join(inv.dir, "out")
	if err := os.MkdirAll(inv.dir, 0o755); err != nil {
		inv.err = err
		return inv
	}
	tmpl, err := subject.Parse(cmd)
	if err != nil {
		inv.err = fmt.Errorf("capstone.yaml %s: %w", field, err)
		return inv
	}
	inv.apiKey = e.opt.Target.APIKey
	if e.opt.MintAPIKey != nil {
		k, err := e.opt.MintAPIKey()
		if err != nil {
			inv.err = fmt.Errorf("minting an API key for %s: %w", field, err)
			return inv
		}
		inv.apiKey = k
	}
	inv.keyFP = keyFingerprint(inv.apiKey)
	e.client.AddSecret(inv.apiKey)
	if e.opt.Secrets != nil {
		e.opt.Secrets(inv.apiKey)
	}
	if timeout <= 0 || timeout > e.opt.SubjectTimeout {
		timeout = e.opt.SubjectTimeout
	}
	spec := subject.Spec{
		Template:   tmpl,
		Inputs:     subject.Inputs{Out: inv.outDir, Acceptance: e.opt.SelfExe},
		Executable: e.opt.SelfExe,
		WorkDir:    inv.dir,
		Dir:        e.sub().Dir,
		Timeout:    timeout,
		Env: subject.Env{
			Domain:       e.opt.Target.Domain,
			APIKey:       inv.apiKey,
			DataAPIURL:   e.opt.Stubs.DataAPIURL,
			DataAPIToken: e.opt.Stubs.DataAPIToken,
			RunID:        runID,
		},
	}
	if e.sub().Manifest.Model {
		// A submission with a model in the loop gets a model endpoint in its
		// other commands too (its own tests may need one): a plain scripted
		// model, its requests recorded in this invocation's evidence. Nothing
		// is graded from it; the planted-secret checks are the run scenarios'.
		inv.model = bundledModel(commandScript)
		if err := inv.model.start(e, inv.apiKey, &spec); err != nil {
			inv.model = nil
			inv.err = fmt.Errorf("starting the scripted model for %s: %w", field, err)
			return inv
		}
		defer inv.model.finish(inv.dir)
	}
	var rec *observe.Proxy
	if !e.mock() {
		if rec, err = observe.StartFor(e.targetURL(), e.opt.View); err != nil {
			inv.err = fmt.Errorf("starting the recording proxy: %w", err)
			return inv
		}
		spec.Env.Domain = rec.Domain()
	}
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
	e.progress("  … running the submission's %s command", field)
	if e.mock() {
		inv.auditSince = e.auditCursor(ctx)
	}
	inv.started = time.Now()
	inv.res, inv.err = subject.Run(ctx, spec)
	inv.ended = time.Now()
	if rec != nil {
		inv.observed = rec.Calls()
		_ = rec.Close()
	}
	rec0 := map[string]any{
		"field": field, "command": cmd, "run_id": runID, "api_key_fp": inv.keyFP,
		"started_at": inv.started.UTC().Format(time.RFC3339Nano), "ended_at": inv.ended.UTC().Format(time.RFC3339Nano),
		"result": inv.res, "harness_error": errString(inv.err),
	}
	if inv.model != nil {
		rec0["model_script"] = inv.model.scriptName
	}
	b, _ := json.MarshalIndent(rec0, "", "  ")
	_ = os.WriteFile(filepath.Join(inv.dir, "invocation.json"), b, 0o644)
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
	case inv.err != nil:
		return fmt.Errorf("the harness could not run the submission's %s command: %v", inv.field, inv.err)
	case inv.res == nil:
		return fmt.Errorf("the submission's %s command did not run", inv.field)
	case inv.res.TimedOut:
		return fmt.Errorf("%w: the submission's %s command ran past %s", errSubjectTimedOut, inv.field, inv.res.Duration.Round(time.Second))
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
