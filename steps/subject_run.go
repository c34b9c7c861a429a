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

	"github.com/osb-capstone/acceptance/fixtures"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/recompute"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/harness/summary"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// subjectRun is one run of the subject on one input, with everything the
// checks need: outputs, the validated summary, the harness's recomputation,
// and (bundled server) the audit events of the sandboxes it created.
type subjectRun struct {
	launch
	key      string
	fixture  string
	question string
	csvPath  string

	marker runMarker // the value planted in its input (attribution.go)

	faultAt      time.Time // when a drill's fault hit the run
	faultSandbox string
	faultCause   string // the observed call that timed the fault (progress.go)
	// faultDone: on a real target, when the harness's DELETE of faultSandbox
	// answered 204 (a real server's DELETE can take seconds; the subject's
	// recording proxy answered the sandbox as unknown from faultAt on).
	faultDone time.Time
	// policyDeny is D1's deny through a real egress sidecar's policy API
	// (d1_policy.go).
	policyDeny *policyDeny
	// faultErr: on a real target, why the harness's DELETE of faultSandbox
	// failed (the target's fault: the drill cannot be judged).
	faultErr string

	sum     *summary.Summary
	sumErrs []summary.ValidationError
	sumErr  error

	stats    *recompute.Stats
	statsErr error

	auditOnce  sync.Once
	audit      []osb.AuditEvent
	sandboxes  []string         // created by this run's key, in order
	attempts   []osb.AuditEvent // every lifecycle call made with this run's key (refused creates too)
	createBody map[string]json.RawMessage
	auditErr   error

	// fate asks a real target what it saw of a sandbox (Target.SandboxFate;
	// nil when it cannot say); vanishWhy caches unexplainedVanish.
	fate       func(ctx context.Context, sandboxID string) (SandboxFate, error)
	vanishOnce sync.Once
	vanishWhy  string
}

type subjectRunOnce struct {
	once sync.Once
	run  *subjectRun
}

// runOnce returns the run made under key, running it (run) the first time
// any scenario asks: scenarios that check different aspects of one run share it.
func (e *Env) runOnce(key string, run func() *subjectRun) *subjectRun {
	e.runsMu.Lock()
	o := e.runs[key]
	if o == nil {
		o = &subjectRunOnce{}
		e.runs[key] = o
	}
	e.runsMu.Unlock()
	o.once.Do(func() { o.run = run() })
	return o.run
}

// runFixture runs the subject on a committed fixture, once per run and fixture.
func (e *Env) runFixture(ctx context.Context, name string) *subjectRun {
	return e.runOnce(name, func() *subjectRun {
		e.faultMu.RLock()
		defer e.faultMu.RUnlock()
		return e.runSubject(ctx, name, name, runOpts{})
	})
}

// during is called once the subject is running (drills use it to inject faults);
// stop ends the subject (its process group is killed after the run's grace).
type during func(ctx context.Context, r *subjectRun, stop func())

// runOpts vary one subject run for a drill.
type runOpts struct {
	hook  during
	grace time.Duration // SIGTERM→SIGKILL delay when stopped; 0 = the runner's default
	model *agentModel   // run the subject in front of this scripted model (agent_run.go)
	// hardKill: stopping the run SIGKILLs the subject's group at once (D5).
	hardKill bool
	// prepare runs once the run's API key is known, before the subject starts
	// (a fault keyed to the run); an error means the run cannot be measured.
	prepare func(ctx context.Context, r *subjectRun) error
	// finish runs after the subject ended (disarm a keyed fault).
	finish func(ctx context.Context, r *subjectRun)
}

// runSubject runs the subject now, uncached (Env.launch).
func (e *Env) runSubject(ctx context.Context, key, fixture string, o runOpts) *subjectRun {
	r := &subjectRun{key: key, fixture: fixture,
		launch: e.newLaunch("run", filepath.Join("evidence", "subject-"+sanitize(e.repKey(key))), e.runIDFor(key)),
		fate:   e.opt.Target.SandboxFate}
	if err := os.MkdirAll(filepath.Join(r.dir, "input"), 0o755); err != nil {
		r.err = err
		return r
	}
	csvPath, question, err := e.materialize(fixture, filepath.Join(r.dir, "input"))
	if err != nil {
		r.err = err
		return r
	}
	r.csvPath, r.question = csvPath, question
	e.plantRunMarker(ctx, r, csvPath) // before anyone reads it (attribution.go)
	r.stats, r.statsErr = e.recompute(csvPath)

	lo := launchOpts{
		cmd:      e.sub().Manifest.Run,
		inputs:   subject.Inputs{CSV: csvPath, Question: question},
		progress: fmt.Sprintf("  … running the subject on %s", key),
		model:    o.model,
		canaries: true,
		grace:    o.grace,
		hardKill: o.hardKill,
	}
	if o.prepare != nil {
		lo.prepare = func(ctx context.Context) error { return o.prepare(ctx, r) }
	}
	if o.finish != nil {
		lo.finish = func(ctx context.Context) { o.finish(ctx, r) }
	}
	if o.hook != nil {
		lo.during = func(ctx context.Context, stop func()) { o.hook(ctx, r, stop) }
	}
	e.launch(ctx, &r.launch, lo)
	if !r.launched() {
		return r
	}
	if _, err := os.Stat(filepath.Join(r.outDir, "summary.json")); err == nil {
		r.sum, r.sumErrs, r.sumErr = summary.Load(filepath.Join(r.outDir, "summary.json"))
	} else {
		r.sumErr = fmt.Errorf("summary.json is missing from the subject's output")
	}
	e.writeRunRecord(r)
	return r
}

// materialize copies a fixture into dir, or generates the large CSV.
func (e *Env) materialize(name, dir string) (path, question string, err error) {
	if name == "large" {
		return e.generateLarge(dir)
	}
	file := name
	if !strings.HasSuffix(file, ".csv") {
		file += ".csv"
	}
	entry, err := fixtures.Lookup(file)
	if err != nil {
		return "", "", err
	}
	p, err := fixtures.Materialize(dir, file)
	if err != nil {
		return "", "", err
	}
	return p, entry.Question, nil
}

// recompute is the harness's own reading of an input, shared by every
// submission of the session that gets the same bytes.
func (e *Env) recompute(path string) (*recompute.Stats, error) {
	if e.opt.Inputs != nil {
		return e.opt.Inputs.Recompute(path)
	}
	return recompute.File(path)
}

// writeRunRecord stores what the harness saw of the run as evidence.
func (e *Env) writeRunRecord(r *subjectRun) {
	r.writeRecord("run.json", map[string]any{
		"fixture":         r.fixture,
		"question":        r.question,
		"summary_errors":  r.sumErrs,
		"recompute":       r.stats,
		"recompute_error": errString(r.statsErr),
	})
}

// evidence returns the run's evidence paths (relative to the bundle).
func (r *subjectRun) evidence(names ...string) []string {
	out := []string{filepath.Join(r.relDir, "run.json")}
	for _, n := range names {
		out = append(out, filepath.Join(r.relDir, n))
	}
	return out
}

// killed says the harness stopped the run on purpose (a drill's SIGKILL).
func (r *subjectRun) killed() bool { return r.res != nil && r.res.Canceled && !r.faultAt.IsZero() }

// usable reports whether the run can be judged as the submission's: it ran
// at all, within its budget and time, and no failure of the target made it
// fail; the error explains why not. It is the one check every step makes on
// a run (ran, M1's loops).
func (e *Env) usable(ctx context.Context, r *subjectRun) error {
	switch {
	case r.err != nil: // the harness's or the target's, never the submission's (blame.go)
		return harnessf("the harness could not run the subject: %v", r.err)
	case r.res == nil:
		return harnessf("the subject did not run")
	case r.budgetSpent:
		return fmt.Errorf("%w (%s) before this run; grade again with a larger --submission-timeout to measure it", errBudgetSpent, r.budget())
	case r.res.TimedOut:
		return fmt.Errorf("%w (limit reached after %s)", errSubjectTimedOut, r.res.Duration.Round(time.Second))
	case r.res.ExitCode != 0:
		if why := e.targetFailure(ctx, r); why != "" {
			// The subject failed after the target failed it: nothing of the
			// submission was measured (blame.go: the target's fault).
			return harnessf("the target failed the subject's create (%s), and the subject then exited %d: a fault of the target, not of the submission", why, r.res.ExitCode)
		}
		if why := brokenByGrader(r.res); why != "" {
			return harnessf("%s, and the subject then exited %d: a fault of the grader, not of the submission", why, r.res.ExitCode)
		}
		if why := r.unexplainedVanish(); why != "" {
			// Removed by no one the grade can see: the target's or the
			// machine's doing (vanish.go), never the submission's.
			return harnessf("%s; the subject then exited %d: a fault of the target or the machine, not of the submission", why, r.res.ExitCode)
		}
	}
	return nil
}

// brokenByGrader names the exchanges of a command that the grader's own
// confinement broke while the command waited for them (harness/confine
// Status.Broken: a connection's destination unreadable, the guard's upstream
// failing or its answer breaking off); "" when there were none.
func brokenByGrader(res *subject.Result) string {
	if res == nil || res.Confinement == nil || res.Confinement.BrokenCount == 0 {
		return ""
	}
	first := res.Confinement.Broken[0]
	return fmt.Sprintf("the grader's confinement broke %d of its exchanges (first at %s: %s %s)",
		res.Confinement.BrokenCount, first.Time.Format("15:04:05.000"), first.Addr, first.Reason)
}

// targetFailure names a create of the run that the target answered with a
// server error no drill injected (a 5xx is never an answer to a client's
// mistake; e.g. 500 DOCKER::SANDBOX_START_FAILED when a real target's egress
// sidecar did not become ready in time); "" when there was none. A real
// target's answers are the recording proxy's calls; the bundled server's are
// in its audit (loaded here; an audit that cannot be read names none, and
// the step that needs it reports that).
func (e *Env) targetFailure(ctx context.Context, r *subjectRun) string {
	for _, c := range r.observed {
		if c.Method == "POST" && isCreatePath(c.Path) && c.Status >= 500 {
			return fmt.Sprintf("%s %s → %d %s", c.Method, c.Path, c.Status, clip(c.Answer, 200))
		}
	}
	if !e.mock() {
		return ""
	}
	if err := e.loadAudit(ctx, r); err != nil {
		return ""
	}
	return createFailedByServer(r.attempts)
}

// createFailedByServer names the first create of the run's key the bundled
// server answered with a 5xx that no drill injected ("" if none).
func createFailedByServer(attempts []osb.AuditEvent) string {
	for _, ev := range attempts {
		lc := ev.Lifecycle
		if lc != nil && ev.Fault == nil && lc.Method == "POST" && isCreatePath(lc.Path) && lc.Status >= 500 {
			return fmt.Sprintf("POST %s → %d", lc.Path, lc.Status)
		}
	}
	return ""
}

// loadAudit fetches, once, the audit events of every sandbox this run's API
// key created. Against a server without an audit trail it uses what the
// recording proxy saw instead: lifecycle calls only, in the same shape.
func (e *Env) loadAudit(ctx context.Context, r *subjectRun) error {
	if !e.mock() {
		r.auditOnce.Do(func() { r.fromObserved() })
		return nil
	}
	r.auditOnce.Do(func() {
		sh, err := e.fetchKeyShare(ctx, r.keyFP)
		if err != nil {
			r.auditErr = err
			return
		}
		r.attempts, r.sandboxes, r.createBody, r.audit = sh.calls, sh.created, sh.createBody, sh.events
		b, _ := json.MarshalIndent(r.audit, "", "  ")
		_ = os.WriteFile(filepath.Join(r.dir, "audit.json"), b, 0o644)
		b, _ = json.MarshalIndent(r.attempts, "", "  ")
		_ = os.WriteFile(filepath.Join(r.dir, "lifecycle-calls.json"), b, 0o644)
	})
	return r.auditErr
}

func isCreatePath(p string) bool {
	p = strings.TrimSuffix(strings.SplitN(p, "?", 2)[0], "/")
	return p == "/v1/sandboxes" || p == "/sandboxes"
}

// keyFingerprint is how the bundled server's audit names an API key
// (wire.Fingerprint: the first 12 hex digits of its sha256, never the key).
func keyFingerprint(key string) string {
	if key == "" {
		return ""
	}
	return wire.Fingerprint(key)
}

// registerCanaries plants the secrets the server must never find in a sandbox.
// They are added to what the server already watches for: submissions graded
// at once share the server, so each adds its own (labels carry a fingerprint
// of the value, so one submission's canaries never replace another's).
func (e *Env) registerCanaries(ctx context.Context, subjectKey string) {
	c, cancel := ctxTimeout(ctx, 10*time.Second)
	defer cancel()
	e.canaryMu.Lock()
	defer e.canaryMu.Unlock()
	if e.canaries == nil {
		e.canaries = map[string]string{}
		if e.opt.Stubs.DataAPIToken != "" {
			e.canaries["data_api_token_"+keyFingerprint(e.opt.Stubs.DataAPIToken)] = e.opt.Stubs.DataAPIToken
		}
		if e.opt.Target.APIKey != "" {
			e.canaries["platform_api_key"] = e.opt.Target.APIKey
		}
	}
	e.canaries["subject_api_key_"+keyFingerprint(subjectKey)] = subjectKey
	_, _ = e.client.Admin().AddCanaries(c, e.canaries)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// fromObserved turns the recording proxy's calls into lifecycle audit events.
func (r *subjectRun) fromObserved() {
	r.createBody = map[string]json.RawMessage{}
	for _, c := range r.observed {
		ev := osb.AuditEvent{Time: c.Time, SandboxID: c.SandboxID, Kind: "lifecycle", Lifecycle: &osb.AuditLifecycle{
			Method: c.Method, Path: c.Path, Status: c.Status, KeyFingerprint: c.KeyFingerprint, Body: c.Body}}
		r.audit = append(r.audit, ev)
		r.attempts = append(r.attempts, ev)
		if c.Method == "POST" && isCreatePath(c.Path) && c.Status == 202 && c.SandboxID != "" {
			r.sandboxes = append(r.sandboxes, c.SandboxID)
			r.createBody[c.SandboxID] = c.Body
		}
	}
	b, _ := json.MarshalIndent(r.audit, "", "  ")
	_ = os.WriteFile(filepath.Join(r.dir, "audit.json"), b, 0o644)
	_ = os.WriteFile(filepath.Join(r.dir, "lifecycle-calls.json"), b, 0o644)
}

// targetURL is the target as a URL (a domain without a scheme is http).
func (e *Env) targetURL() string {
	d := e.opt.Target.Domain
	if !strings.Contains(d, "://") {
		d = "http://" + d
	}
	return d
}
