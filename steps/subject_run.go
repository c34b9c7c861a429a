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

	"github.com/osb-capstone/acceptance/harness/indexdeny"
	"github.com/osb-capstone/acceptance/harness/injection"

	"github.com/osb-capstone/acceptance/fixtures"
	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/recompute"
	"github.com/osb-capstone/acceptance/harness/summary"
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
	policyDeny *indexdeny.Deny
	// faultErr: on a real target, why the harness's DELETE of faultSandbox
	// failed (the target's fault: the drill cannot be judged).
	faultErr string

	sum     *summary.Summary
	sumErrs []summary.ValidationError
	sumErr  error

	stats    *recompute.Stats
	statsErr error

	model *agentModel // its scripted model (nil: the submission has none)

	// sidecars follows the egress sidecar log of each sandbox the run
	// creates (a real target that gives them; harness/injection).
	sidecars *injection.Sidecars
	// workspaces watches each of its sandboxes' workspace from the host (a
	// real target that can; harness/injection).
	workspaces *injection.Workspaces
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
	// lock: how the run holds the fault lock (command.LockShared unless a
	// drill holds it around its injection: command.LockNone).
	lock command.Lock
	// prepare runs once the run's API key is known, before the subject starts
	// (a fault keyed to the run); an error means the run cannot be measured.
	prepare func(ctx context.Context, r *subjectRun) error
	// finish runs after the subject ended (disarm a keyed fault).
	finish func(ctx context.Context, r *subjectRun)
	// proxied runs once the run's recording proxy is up (a real target),
	// before the subject starts (arm a fault the proxy injects for the
	// run's key); an error means the run cannot be measured.
	proxied func(ctx context.Context, r *subjectRun) error
}

// runSubject runs the subject now, uncached (Env.launch).
func (e *Env) runSubject(ctx context.Context, key, fixture string, o runOpts) *subjectRun {
	r := &subjectRun{key: key, fixture: fixture,
		launch: e.newLaunch("run", filepath.Join("evidence", "subject-"+sanitize(e.repKey(key))), e.runIDFor(key))}
	r.Keep = r.keepSaw // what the target saw is evidence, whoever reads it first (Judge, a step)
	if err := os.MkdirAll(filepath.Join(r.Dir, "input"), 0o755); err != nil {
		r.Err = err
		return r
	}
	csvPath, question, err := e.materialize(fixture, filepath.Join(r.Dir, "input"))
	if err != nil {
		r.Err = err
		return r
	}
	r.csvPath, r.question = csvPath, question
	e.plantRunMarker(ctx, r, csvPath) // before anyone reads it (attribution.go)
	r.stats, r.statsErr = e.recompute(csvPath)

	lo := launchOpts{
		cmd:      e.sub().Manifest.Run,
		inputs:   command.Inputs{CSV: csvPath, Question: question},
		progress: fmt.Sprintf("  … running the subject on %s", key),
		model:    o.model,
		canaries: true,
		grace:    o.grace,
		hardKill: o.hardKill,
		lock:     o.lock,
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
	if o.proxied != nil {
		lo.proxied = func(ctx context.Context, _ *launch) error { return o.proxied(ctx, r) }
	}
	if !e.mock() && (e.opt.Target.SidecarLog != nil || e.opt.Target.WatchCreates != nil) {
		// What the run's sandboxes' egress sidecars say (the allowed lookups,
		// and the denials where they log them) is read by the egress checks,
		// and what their containers write into the workspace by D4's marker
		// check; a sidecar's log is gone with its sandbox, and a file may be
		// gone at once, so both are followed from the create on.
		if e.opt.Target.SidecarLog != nil {
			r.sidecars = injection.NewSidecars(e.opt.Target.SidecarLog)
		}
		if e.opt.Target.WatchCreates != nil {
			r.workspaces = injection.NewWorkspaces(e.opt.Target.WatchCreates, injection.WatchedDir)
		}
		hook := lo.during
		lo.during = func(ctx context.Context, stop func()) {
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				r.sidecars.Watch(ctx, &r.launch)
			}()
			go func() {
				defer wg.Done()
				r.workspaces.Watch(ctx, &r.launch)
			}()
			if hook != nil {
				hook(ctx, stop)
			}
			wg.Wait()
		}
	}
	r.model = e.launch(ctx, &r.launch, lo)
	if !r.Launched() {
		return r
	}
	if _, err := os.Stat(filepath.Join(r.OutDir, "summary.json")); err == nil {
		r.sum, r.sumErrs, r.sumErr = summary.Load(filepath.Join(r.OutDir, "summary.json"))
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
	r.WriteRecord("run.json", map[string]any{
		"fixture":         r.fixture,
		"question":        r.question,
		"summary_errors":  r.sumErrs,
		"recompute":       r.stats,
		"recompute_error": errString(r.statsErr),
	})
}

// evidence returns the run's evidence paths (relative to the bundle).
func (r *subjectRun) evidence(names ...string) []string {
	out := []string{filepath.Join(r.RelDir, "run.json")}
	for _, n := range names {
		out = append(out, filepath.Join(r.RelDir, n))
	}
	return out
}

// killed says the harness stopped the run on purpose (a drill's SIGKILL).
func (r *subjectRun) killed() bool { return r.Res != nil && r.Res.Canceled && !r.faultAt.IsZero() }

// judge is the run's Judge (harness/command: the one judge of a command's
// outcome), with the drill's own sandbox (never a vanish) named first. It is
// the one check every step makes on a run (ran, M1's loops).
func (r *subjectRun) judge(ctx context.Context) error {
	r.Field, r.DrillSandbox, r.DrillAt = "run", r.faultSandbox, r.faultAt
	return r.Judge(ctx)
}

// keepSaw stores what the target saw of the run's key as evidence (its
// Record's Keep: called once, by whoever reads Saw first).
func (r *subjectRun) keepSaw(saw command.Saw) {
	b, _ := json.MarshalIndent(saw.Events, "", "  ")
	_ = os.WriteFile(filepath.Join(r.Dir, "audit.json"), b, 0o644)
	b, _ = json.MarshalIndent(saw.Calls, "", "  ")
	_ = os.WriteFile(filepath.Join(r.Dir, "lifecycle-calls.json"), b, 0o644)
}

func isCreatePath(p string) bool { return command.IsCreatePath(p) }

// keyFingerprint is how the bundled server's audit names an API key.
func keyFingerprint(key string) string { return command.KeyFingerprint(key) }

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

// targetURL is the target as a URL (a domain without a scheme is http).
func (e *Env) targetURL() string {
	d := e.opt.Target.Domain
	if !strings.Contains(d, "://") {
		d = "http://" + d
	}
	return d
}
