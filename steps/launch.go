package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/osb-capstone/acceptance/harness/boxpolicy"
	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// launch is one submission command the harness started (harness/command):
// the run (on an input, with or without the agent's scripted model) and the
// other entry points (contract, reap, test.unit, test.integration). Every
// one of them starts through Env.launch, which gives command.Launch the
// session's side: the key minting, the scripted model, the box, the budget
// and the witness of the target. subjectRun and invocation embed it.
type launch = command.Record

// launchOpts vary one launch.
type launchOpts struct {
	cmd      string         // the manifest's command line
	inputs   subject.Inputs // CSV and question (run); Out and Acceptance are filled in
	timeout  time.Duration  // 0 or over the session's limit: the session's SubjectTimeout
	progress string         // the progress line
	// lock: how the command holds the session's fault lock (command.Lock).
	lock command.Lock
	// keyless: the command's keyless requests are judged (contract).
	keyless bool
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
	// proxied runs once the command's recording proxy is up (a real target)
	// and before the command starts (a fault the proxy injects for its key);
	// an error means the command cannot be measured.
	proxied func(ctx context.Context, l *launch) error
}

// newLaunch names the command's evidence directory (bundle-relative relDir).
func (e *Env) newLaunch(field, relDir, runID string) launch {
	return *command.New(field, relDir, filepath.Join(e.opt.BundleDir, relDir), runID)
}

// witness is what tells the grader what the target saw of a key.
func (e *Env) witness() command.Witness {
	if e.mock() {
		return command.AuditWitness{Client: e.client}
	}
	return command.ProxyWitness{}
}

// fate is the target's view of a sandbox (nil when it cannot say).
func (e *Env) fate() func(context.Context, string) (command.SandboxFate, error) {
	f := e.opt.Target.SandboxFate
	if f == nil {
		return nil
	}
	return func(ctx context.Context, id string) (command.SandboxFate, error) {
		sf, err := f(ctx, id)
		return command.SandboxFate{Deletes: sf.Deletes, LogNames: sf.LogNames, ContainerGone: sf.ContainerGone,
			Stopped: sf.Stopped, StoppedAt: sf.StoppedAt, EngineSaid: sf.EngineSaid}, err
	}
}

// launch runs the command described by l and o (command.Launch), filling
// in l; it returns the command's scripted model (nil: none). The fault lock
// is taken as o.lock says.
func (e *Env) launch(ctx context.Context, l *launch, o launchOpts) *agentModel {
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		l.Err = err
		return nil
	}
	m := o.model
	if m == nil && e.sub().Manifest.Model {
		// A submission with a model in the loop gets a model endpoint in
		// every command (its own tests may need one): its runs an ordinary
		// model, its other commands a plain one whose answers grade nothing.
		if l.Field == "run" {
			m = bundledModel(defaultScript)
		} else {
			m = bundledModel(commandScript)
		}
	}
	var started *agentModel
	spec := command.Spec{
		Field: l.Field, RelDir: l.RelDir, Dir: l.Dir, RunID: l.RunID,
		Command: o.cmd, Inputs: o.inputs, Timeout: o.timeout, MaxTimeout: e.opt.SubjectTimeout,
		Grace: o.grace, HardKill: o.hardKill, SubmissionDir: e.sub().Dir, Executable: e.opt.SelfExe,
		Env: subject.Env{
			Domain:       e.opt.Target.Domain,
			DataAPIURL:   e.opt.Stubs.DataAPIURL,
			DataAPIToken: e.opt.Stubs.DataAPIToken,
		},
		WantKeyless: o.keyless,
	}
	opts := command.Opts{
		Lock: o.lock, FaultLock: e.faultMu,
		APIKey: e.opt.Target.APIKey, MintKey: e.opt.MintAPIKey,
		OnKey: func(ctx context.Context, key string) {
			e.client.AddSecret(key)
			if e.opt.Secrets != nil {
				e.opt.Secrets(key)
			}
			if o.canaries && e.mock() {
				e.registerCanaries(ctx, key)
			}
		},
		Prepare:    o.prepare,
		Finish:     o.finish,
		During:     o.during,
		CSVURL:     e.opt.Stubs.CSVURL,
		BudgetLeft: e.budgetLeft, BudgetOf: e.opt.SubmissionTimeout, Spend: e.spend,
		Witness: e.witness(), View: e.opt.View, Fate: e.fate(),
		Setup: func(ctx context.Context, l *launch, spec *subject.Spec) (func(), error) {
			if o.proxied != nil {
				if err := o.proxied(ctx, l); err != nil {
					return nil, err
				}
			}
			var cleanup func()
			if m != nil {
				if err := m.start(e, l.APIKey, spec); err != nil {
					return nil, fmt.Errorf("starting the scripted model for %s: %w", what(l), err)
				}
				started = m
				cleanup = func() { m.finish(l.Dir) }
			}
			e.confine(ctx, l, spec)
			return cleanup, nil
		},
		LifecyclePort: boxpolicy.LoopbackPort(e.opt.Target.Domain),
		Progress:      func() { e.progress("%s", o.progress) },
	}
	if !e.mock() {
		opts.ProxyTarget = e.targetURL()
	}
	l.Launch(ctx, spec, opts)
	return started
}

// what names the command in a harness error.
func what(l *launch) string {
	if l.Field == "run" {
		return "the subject"
	}
	return l.Field
}
