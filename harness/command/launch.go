package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// Lock is how a command holds the session's fault lock (package doc).
type Lock int

const (
	// LockShared: no server-wide fault meanwhile; others run too.
	LockShared Lock = iota
	// LockNone: the caller holds the fault lock (a drill's injection).
	LockNone
	// LockExclusive: alone on the server (a contract command with
	// confinement off only).
	LockExclusive
)

// Spec is the command to launch.
type Spec struct {
	Field   string // manifest field: run, contract, reap, test.unit, test.integration
	RelDir  string // its evidence directory, relative to the bundle
	Dir     string // absolute
	RunID   string // CAPSTONE_RUN_ID
	Command string // the manifest's command line
	// Inputs: CSV and question (run); Out and Acceptance are filled in.
	Inputs subject.Inputs
	// Timeout: 0 or over MaxTimeout is MaxTimeout.
	Timeout    time.Duration
	MaxTimeout time.Duration
	Grace      time.Duration // SIGTERM→SIGKILL delay when stopped; 0 = the runner's default
	HardKill   bool          // stopping SIGKILLs at once (D5)
	// SubmissionDir is the command's working directory; Executable the
	// acceptance binary.
	SubmissionDir, Executable string
	// Env: the subject environment; APIKey (and, behind the recording
	// proxy, Domain) are set by Launch.
	Env subject.Env
	// WantKeyless: the command's keyless requests are judged (contract).
	WantKeyless bool
}

// Opts are the session's side of one launch.
type Opts struct {
	Lock      Lock
	FaultLock *sync.RWMutex // nil: no lock

	// APIKey is the session's key; MintKey, when set, mints the command's own.
	APIKey  string
	MintKey func() (string, error)
	// OnKey runs once the key is known (register it as a secret, plant
	// canaries); Prepare then, before the command starts (an error means
	// the command cannot be measured); Finish after it ended.
	OnKey   func(ctx context.Context, key string)
	Prepare func(ctx context.Context) error
	Finish  func(ctx context.Context)
	// During runs while the command runs; stop ends it.
	During func(ctx context.Context, stop func())
	// CSVURL serves the input over HTTP when the command line asks for {csv_url}.
	CSVURL func(csv string) (string, error)
	// BudgetLeft is what is left of the submission's time (bounded false:
	// no bound); Spend charges a command's time to it.
	BudgetLeft func() (time.Duration, bool)
	BudgetOf   time.Duration
	Spend      func(time.Duration)
	// Witness: AuditWitness on the bundled server; ProxyWitness on a real
	// target, whose recording proxy Launch starts in front of ProxyTarget.
	Witness     Witness
	ProxyTarget string
	View        *observe.View
	Fate        func(ctx context.Context, sandboxID string) (SandboxFate, error)
	// Setup completes the runner's spec once the key is known (a scripted
	// model, the box): cleanup runs after the command.
	Setup func(ctx context.Context, rec *Record, spec *subject.Spec) (cleanup func(), err error)
	// LifecyclePort is the target's lifecycle port on the host: its box's
	// guard notes the command's keyless requests there.
	LifecyclePort int
	// Progress prints the "running…" line.
	Progress func()
}

// Launch runs the command, holding the fault lock as o.Lock says, and
// returns what the grader kept of it. It never returns nil.
func Launch(ctx context.Context, s Spec, o Opts) *Record {
	rec := New(s.Field, s.RelDir, s.Dir, s.RunID)
	rec.Launch(ctx, s, o)
	return rec
}

// New is the record of a command not launched yet: its evidence directory
// is known (a caller may put its inputs there first), nothing else.
func New(field, relDir, dir, runID string) *Record {
	return &Record{Field: field, RelDir: relDir, Dir: dir, OutDir: filepath.Join(dir, "out"), RunID: runID}
}

// Launch is the package's Launch on a record made by New, so that hooks
// holding it see it fill in while the command runs.
func (rec *Record) Launch(ctx context.Context, s Spec, o Opts) {
	rec.Witness, rec.Fate, rec.WantKeyless = o.Witness, o.Fate, s.WantKeyless
	if o.FaultLock != nil {
		switch o.Lock {
		case LockShared:
			o.FaultLock.RLock()
			defer o.FaultLock.RUnlock()
		case LockExclusive:
			o.FaultLock.Lock()
			defer o.FaultLock.Unlock()
		}
	}
	rec.launch(ctx, s, o)
}

func (rec *Record) launch(ctx context.Context, s Spec, o Opts) {
	if err := os.MkdirAll(rec.Dir, 0o755); err != nil {
		rec.Err = err
		return
	}
	rec.APIKey = o.APIKey
	if o.MintKey != nil {
		k, err := o.MintKey()
		if err != nil {
			rec.Err = fmt.Errorf("minting an API key for %s: %w", rec.what(), err)
			return
		}
		rec.APIKey = k
	}
	rec.KeyFP = KeyFingerprint(rec.APIKey)
	if o.OnKey != nil {
		o.OnKey(ctx, rec.APIKey)
	}
	if o.Prepare != nil {
		if err := o.Prepare(ctx); err != nil {
			rec.Err = fmt.Errorf("preparing the run: %w", err)
			return
		}
	}
	if o.Finish != nil {
		defer o.Finish(context.WithoutCancel(ctx))
	}
	tmpl, err := subject.Parse(s.Command)
	if err != nil {
		if rec.Field == "run" {
			rec.Err = fmt.Errorf("the submission's run command: %w", err)
		} else {
			rec.Err = fmt.Errorf("capstone.yaml %s: %w", rec.Field, err)
		}
		return
	}
	in := s.Inputs
	in.Out, in.Acceptance = rec.OutDir, s.Executable
	if in.CSV != "" && in.CSVURL == "" && tmpl.Uses("{csv_url}") && o.CSVURL != nil {
		if u, err := o.CSVURL(in.CSV); err == nil {
			in.CSVURL = u
		}
	}
	timeout := s.Timeout
	if timeout <= 0 || timeout > s.MaxTimeout {
		timeout = s.MaxTimeout
	}
	if o.BudgetLeft != nil {
		if left, bounded := o.BudgetLeft(); bounded {
			if left <= 0 {
				// The submission spent its whole time: the command does not
				// start, as one that ran past its limit.
				rec.BudgetSpent, rec.BudgetOf = true, o.BudgetOf
				rec.Started, rec.Ended = time.Now(), time.Now()
				rec.Res = &subject.Result{ExitCode: -1, TimedOut: true, NotStarted: true, OutDir: rec.OutDir,
					RanReference: tmpl.RunsReference()}
				return
			}
			timeout = min(timeout, left)
		}
	}
	env := s.Env
	env.APIKey = rec.APIKey
	env.RunID = s.RunID
	spec := subject.Spec{
		Template:     tmpl,
		Inputs:       in,
		Executable:   s.Executable,
		WorkDir:      rec.Dir,
		Dir:          s.SubmissionDir,
		Timeout:      timeout,
		Grace:        s.Grace,
		KillOnCancel: s.HardKill,
		Env:          env,
	}
	if o.ProxyTarget != "" {
		// A server without an audit trail: the command talks to it through
		// the grader's recording proxy, so its lifecycle calls are on record.
		p, err := observe.StartFor(o.ProxyTarget, o.View)
		if err != nil {
			rec.Err = fmt.Errorf("starting the recording proxy: %w", err)
			return
		}
		spec.Env.Domain = p.Domain()
		rec.Proxy = p
	}
	if o.Setup != nil {
		cleanup, err := o.Setup(ctx, rec, &spec)
		if cleanup != nil {
			defer cleanup()
		}
		if err != nil {
			rec.Err = err
			rec.closeProxy()
			return
		}
	}
	rec.watchKeyless(&spec, o.LifecyclePort)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var duringDone sync.WaitGroup
	if o.During != nil {
		duringDone.Add(1)
		go func() {
			defer duringDone.Done()
			o.During(runCtx, cancel)
		}()
	}
	if o.Progress != nil {
		o.Progress()
	}
	if o.Witness != nil && s.Field != "run" {
		rec.AuditSince = o.Witness.Cursor(ctx)
	}
	rec.Started = time.Now()
	rec.Res, rec.Err = subject.Run(runCtx, spec)
	rec.Ended = time.Now()
	if o.Spend != nil {
		o.Spend(rec.Ended.Sub(rec.Started))
	}
	cancel()
	duringDone.Wait() // its writes happen before anyone reads them
	if rec.Boxed && (rec.Res == nil || rec.Res.Confinement == nil || rec.Res.Confinement.Mode == "off") {
		rec.Boxed, rec.unattributed = false, true // no box saw its requests
	}
	rec.closeProxy()
}

// ProxyLifecycleFile is the run's lifecycle exchanges as its recording proxy
// saw them (observe.Call: times, answer state, shape, headers, error code).
const ProxyLifecycleFile = "proxy-lifecycle.json"

// closeProxy keeps what the recording proxy saw and closes it.
func (rec *Record) closeProxy() {
	if rec.Proxy == nil {
		return
	}
	rec.Observed = rec.Proxy.Calls()
	rec.EndpointCalls = rec.Proxy.EndpointCalls()
	_ = rec.Proxy.Close()
	if len(rec.EndpointCalls) > 0 {
		b, _ := json.MarshalIndent(rec.EndpointCalls, "", "  ")
		_ = os.WriteFile(filepath.Join(rec.Dir, "endpoint-calls.json"), b, 0o644)
	}
	if len(rec.Observed) > 0 {
		// The lifecycle exchanges with their timing and answer contract
		// (the upgrade check's latencies and contract changes).
		b, _ := json.MarshalIndent(rec.Observed, "", "  ")
		_ = os.WriteFile(filepath.Join(rec.Dir, ProxyLifecycleFile), b, 0o644)
	}
}

// watchKeyless makes the box's guard of the lifecycle port note the
// command's keyless requests (Record.NoteRequest), when its keyless
// requests are judged and the box guards that port.
func (rec *Record) watchKeyless(spec *subject.Spec, port int) {
	if !rec.WantKeyless || spec.Confine == nil || spec.Confine.Guard == nil || port <= 0 || spec.Confine.Guard(port) == nil {
		return
	}
	inner := spec.Confine.Guard
	spec.Confine.Guard = func(p int) func(*http.Request) string {
		g := inner(p)
		if p != port || g == nil {
			return g
		}
		return func(r *http.Request) string {
			why := g(r)
			if why == "" {
				rec.NoteRequest(r)
			}
			return why
		}
	}
	rec.Boxed = true
}

// errUnattributed: the command's keyless requests are judged, but no box
// saw them and it did not run alone.
var errUnattributed = errors.New("the command's keyless requests cannot be attributed: its box's guard did not see them (the box did not run) and it did not run alone on the server")

// what names the command in a harness error.
func (rec *Record) what() string {
	if rec.Field == "run" {
		return "the subject"
	}
	return rec.Field
}
