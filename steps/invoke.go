package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
	err     error // the harness could not run it

	observed []observe.Call

	auditOnce sync.Once
	auditErr  error
	calls     []osb.AuditEvent // lifecycle calls with this invocation's key
	keyless   []osb.AuditEvent // lifecycle calls without a key while it ran
	audit     []osb.AuditEvent // every event of the sandboxes it created
	created   []string         // sandboxes it created
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
	var rec *observe.Proxy
	if !e.mock() {
		if rec, err = observe.Start(e.targetURL()); err != nil {
			inv.err = fmt.Errorf("starting the recording proxy: %w", err)
			return inv
		}
		spec.Env.Domain = rec.Domain()
	}
	e.faultMu.RLock() // no server-wide fault of another scenario or submission meanwhile
	defer e.faultMu.RUnlock()
	e.progress("  … running the submission's %s command", field)
	inv.started = time.Now()
	inv.res, inv.err = subject.Run(ctx, spec)
	inv.ended = time.Now()
	if rec != nil {
		inv.observed = rec.Calls()
		_ = rec.Close()
	}
	b, _ := json.MarshalIndent(map[string]any{
		"field": field, "command": cmd, "run_id": runID, "api_key_fp": inv.keyFP,
		"started_at": inv.started.UTC().Format(time.RFC3339Nano), "ended_at": inv.ended.UTC().Format(time.RFC3339Nano),
		"result": inv.res, "harness_error": errString(inv.err),
	}, "", "  ")
	_ = os.WriteFile(filepath.Join(inv.dir, "invocation.json"), b, 0o644)
	return inv
}

// evidence lists the invocation's evidence files.
func (inv *invocation) evidence(names ...string) []string {
	out := []string{filepath.Join(inv.relDir, "invocation.json"), filepath.Join(inv.relDir, "stdout.log"), filepath.Join(inv.relDir, "stderr.log")}
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
		var events []osb.AuditEvent
		if e.mock() {
			c, cancel := ctxTimeout(ctx, 30*time.Second)
			defer cancel()
			res, err := e.client.Admin().Audit(c, osb.AuditQuery{})
			if err != nil {
				inv.auditErr = err
				return
			}
			if !res.Decoded {
				inv.auditErr = fmt.Errorf("/_mock/audit answered %d: %s", res.Status, excerpt(res.Body, 200))
				return
			}
			events = res.Value.Events
		} else {
			for _, c := range inv.observed {
				events = append(events, osb.AuditEvent{Time: c.Time, SandboxID: c.SandboxID, Kind: "lifecycle", Lifecycle: &osb.AuditLifecycle{
					Method: c.Method, Path: c.Path, Status: c.Status, KeyFingerprint: c.KeyFingerprint, Body: c.Body}})
			}
		}
		mine := map[string]bool{}
		for _, ev := range events {
			lc := ev.Lifecycle
			if ev.Kind != "lifecycle" || lc == nil {
				continue
			}
			switch {
			case lc.KeyFingerprint == inv.keyFP && inv.keyFP != "":
				inv.calls = append(inv.calls, ev)
				if lc.Method == "POST" && isCreatePath(lc.Path) && lc.Status == 202 && ev.SandboxID != "" && !mine[ev.SandboxID] {
					mine[ev.SandboxID] = true
					inv.created = append(inv.created, ev.SandboxID)
				}
			case lc.KeyFingerprint == "" && !ev.Time.Before(inv.started) && !ev.Time.After(inv.ended):
				inv.keyless = append(inv.keyless, ev)
			}
		}
		for _, ev := range events {
			if mine[ev.SandboxID] && ev.SandboxID != "" {
				inv.audit = append(inv.audit, ev)
			}
		}
		sort.Slice(inv.audit, func(i, j int) bool { return inv.audit[i].Seq < inv.audit[j].Seq })
		all := append(append([]osb.AuditEvent{}, inv.calls...), inv.keyless...)
		sort.Slice(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
		b, _ := json.MarshalIndent(map[string]any{"calls_with_its_key": inv.calls, "keyless_calls_while_it_ran": inv.keyless, "sandbox_events": inv.audit}, "", "  ")
		_ = os.WriteFile(filepath.Join(inv.dir, "server-saw.json"), b, 0o644)
	})
	return inv.auditErr
}

// osbEvent is an audit event (short name for the checks).
type osbEvent = osb.AuditEvent
