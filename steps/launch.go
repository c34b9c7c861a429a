package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// launch is one submission command the harness started: the run (on an
// input, with or without the agent's scripted model) and the other entry
// points (contract, reap, test.unit, test.integration). Every one of them
// starts through Env.launch, the one place that mints the command's API key,
// builds its spec, starts its scripted model and (real target) its recording
// proxy, runs it and keeps what it did. subjectRun and invocation embed it.
type launch struct {
	field  string // manifest field: run, contract, reap, test.unit, test.integration
	relDir string // evidence/<name>/ (relative to the bundle)
	dir    string // absolute
	outDir string // {out}

	apiKey string // the command's own API key (minted per command when the server can)
	keyFP  string
	runID  string // CAPSTONE_RUN_ID it was given

	started, ended time.Time
	res            *subject.Result
	err            error       // the harness could not run it
	model          *agentModel // its scripted model (nil: the submission has none)

	observed []observe.Call // a real target's lifecycle calls, seen by the recording proxy
	// endpointCalls are its execd and egress calls through the proxy's
	// rewritten endpoints (a real target; evidence endpoint-calls.json).
	endpointCalls []observe.Call
	rec           *observe.Proxy // that proxy, while the command runs
	auditSince    int64          // bundled server: the audit cursor before it started
	// budgetSpent: the submission's time was spent before this command, which
	// did not start (its result says timed out).
	budgetSpent bool
	budgetOf    time.Duration // the submission's time (SubmissionTimeout)
}

func (l *launch) budget() string { return l.budgetOf.String() + " of command time" }

// launchOpts vary one launch.
type launchOpts struct {
	cmd      string         // the manifest's command line
	inputs   subject.Inputs // CSV and question (run); Out and Acceptance are filled in
	timeout  time.Duration  // 0 or over the session's limit: the session's SubjectTimeout
	progress string         // the progress line
	// model: run in front of this scripted model; nil gives a submission with
	// model: true the bundled default for its field (defaultScript for run,
	// commandScript for the others).
	model *agentModel
	// canaries: plant the command's key among the server's canaries (runs).
	canaries bool
	grace    time.Duration // SIGTERM→SIGKILL delay when stopped; 0 = the runner's default
	hardKill bool          // stopping SIGKILLs at once (D5)
	// prepare runs once the key is known, before the command starts; an
	// error means the command cannot be measured.
	prepare func(ctx context.Context) error
	// finish runs after the command ended (and prepare succeeded).
	finish func(ctx context.Context)
	// during runs while the command runs; stop ends it.
	during func(ctx context.Context, stop func())
}

// newLaunch names the command's evidence directory (bundle-relative relDir).
func (e *Env) newLaunch(field, relDir, runID string) launch {
	dir := filepath.Join(e.opt.BundleDir, relDir)
	return launch{field: field, relDir: relDir, dir: dir, outDir: filepath.Join(dir, "out"), runID: runID}
}

// launch runs the command described by l and o, filling in l. The caller
// holds faultMu as its command needs (shared, or alone on the server).
func (e *Env) launch(ctx context.Context, l *launch, o launchOpts) {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		l.err = err
		return
	}
	l.apiKey = e.opt.Target.APIKey
	if e.opt.MintAPIKey != nil {
		k, err := e.opt.MintAPIKey()
		if err != nil {
			l.err = fmt.Errorf("minting an API key for %s: %w", l.what(), err)
			return
		}
		l.apiKey = k
	}
	l.keyFP = keyFingerprint(l.apiKey)
	e.client.AddSecret(l.apiKey)
	if e.opt.Secrets != nil {
		e.opt.Secrets(l.apiKey)
	}
	if o.canaries && e.mock() {
		e.registerCanaries(ctx, l.apiKey)
	}
	if o.prepare != nil {
		if err := o.prepare(ctx); err != nil {
			l.err = fmt.Errorf("preparing the run: %w", err)
			return
		}
	}
	if o.finish != nil {
		defer o.finish(context.WithoutCancel(ctx))
	}
	tmpl, err := subject.Parse(o.cmd)
	if err != nil {
		if l.field == "run" {
			l.err = fmt.Errorf("the submission's run command: %w", err)
		} else {
			l.err = fmt.Errorf("capstone.yaml %s: %w", l.field, err)
		}
		return
	}
	in := o.inputs
	in.Out, in.Acceptance = l.outDir, e.opt.SelfExe
	if in.CSV != "" && in.CSVURL == "" && tmpl.Uses("{csv_url}") && e.opt.Stubs.CSVURL != nil {
		if u, err := e.opt.Stubs.CSVURL(in.CSV); err == nil {
			in.CSVURL = u
		}
	}
	timeout := o.timeout
	if timeout <= 0 || timeout > e.opt.SubjectTimeout {
		timeout = e.opt.SubjectTimeout
	}
	if left, bounded := e.budgetLeft(); bounded {
		if left <= 0 {
			// The submission spent its whole time: the command does not
			// start, as one that ran past its limit.
			l.budgetSpent, l.budgetOf = true, e.opt.SubmissionTimeout
			l.started, l.ended = time.Now(), time.Now()
			l.res = &subject.Result{ExitCode: -1, TimedOut: true, NotStarted: true, OutDir: l.outDir,
				RanReference: tmpl.RunsReference()}
			return
		}
		timeout = min(timeout, left)
	}
	spec := subject.Spec{
		Template:     tmpl,
		Inputs:       in,
		Executable:   e.opt.SelfExe,
		WorkDir:      l.dir,
		Dir:          e.sub().Dir,
		Timeout:      timeout,
		Grace:        o.grace,
		KillOnCancel: o.hardKill,
		Env: subject.Env{
			Domain:       e.opt.Target.Domain,
			APIKey:       l.apiKey,
			DataAPIURL:   e.opt.Stubs.DataAPIURL,
			DataAPIToken: e.opt.Stubs.DataAPIToken,
			RunID:        l.runID,
		},
	}
	m := o.model
	if m == nil && e.sub().Manifest.Model {
		// A submission with a model in the loop gets a model endpoint in
		// every command (its own tests may need one): its runs an ordinary
		// model, its other commands a plain one whose answers grade nothing.
		if l.field == "run" {
			m = bundledModel(defaultScript)
		} else {
			m = bundledModel(commandScript)
		}
	}
	if m != nil {
		if err := m.start(e, l.apiKey, &spec); err != nil {
			l.err = fmt.Errorf("starting the scripted model for %s: %w", l.what(), err)
			return
		}
		l.model = m
		defer m.finish(l.dir)
	}
	// A server without an audit trail: the command talks to it through the
	// harness's recording proxy, so its lifecycle calls are on record.
	if !e.mock() {
		rec, err := observe.StartFor(e.targetURL(), e.opt.View)
		if err != nil {
			l.err = fmt.Errorf("starting the recording proxy: %w", err)
			return
		}
		spec.Env.Domain = rec.Domain()
		l.rec = rec
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var duringDone sync.WaitGroup
	if o.during != nil {
		duringDone.Add(1)
		go func() {
			defer duringDone.Done()
			o.during(runCtx, cancel)
		}()
	}
	e.progress("%s", o.progress)
	if e.mock() && l.field != "run" {
		l.auditSince = e.auditCursor(ctx)
	}
	e.confine(ctx, l, &spec)
	l.started = time.Now()
	l.res, l.err = subject.Run(runCtx, spec)
	l.ended = time.Now()
	e.spend(l.ended.Sub(l.started))
	cancel()
	duringDone.Wait() // its writes happen before anyone reads them
	if l.rec != nil {
		l.observed = l.rec.Calls()
		l.endpointCalls = l.rec.EndpointCalls()
		_ = l.rec.Close()
		if len(l.endpointCalls) > 0 {
			b, _ := json.MarshalIndent(l.endpointCalls, "", "  ")
			_ = os.WriteFile(filepath.Join(l.dir, "endpoint-calls.json"), b, 0o644)
		}
	}
}

// what names the command in a harness error.
func (l *launch) what() string {
	if l.field == "run" {
		return "the subject"
	}
	return l.field
}

// launched says the command was started (its record is worth writing).
func (l *launch) launched() bool { return !l.started.IsZero() }

// writeRecord stores what the harness saw of the command in the evidence
// file name, with fields of the caller's own besides the launch's.
func (l *launch) writeRecord(name string, fields map[string]any) {
	rec := map[string]any{
		"api_key_fp":    l.keyFP,
		"started_at":    l.started.UTC().Format(time.RFC3339Nano),
		"ended_at":      l.ended.UTC().Format(time.RFC3339Nano),
		"result":        l.res,
		"harness_error": errString(l.err),
	}
	for k, v := range fields {
		rec[k] = v
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	_ = os.WriteFile(filepath.Join(l.dir, name), b, 0o644)
}
