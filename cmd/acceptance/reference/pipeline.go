package reference

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/summary"
)

// Config is everything one run needs. DefaultConfig fills the course's values.
type Config struct {
	CSV      string
	Question string
	Out      string

	Domain string // host:port of the lifecycle server, no scheme (OPEN_SANDBOX_DOMAIN)
	APIKey string // OPEN_SANDBOX_API_KEY

	// DataAPIURL / DataAPIToken: the optional external data API. Its host is
	// added to the allow list; with a token, credentialProxy is enabled and
	// the token goes to the egress vault, never into the sandbox.
	DataAPIURL   string
	DataAPIToken string

	// RunID ($CAPSTONE_RUN_ID) labels the sandbox (metadata capstone-run-id)
	// so an inspection (`reference reap`) finds it if this process is killed.
	RunID string

	Image          string
	SandboxTTL     time.Duration // the sandbox's own timeout (server-side TTL)
	WallClock      time.Duration // the whole run
	CommandTimeout time.Duration // each command
	MaxSteps       int           // commands in the sandbox
	ReadyTimeout   time.Duration // waiting for execd /ping

	// Agent mode (agent.go): consult the model at OPENAI_BASE_URL.
	Agent         bool
	ModelBaseURL  string        // OPENAI_BASE_URL
	ModelAPIKey   string        // OPENAI_API_KEY
	ModelName     string        // the model id asked for
	AgentMaxTurns int           // most model requests (summary.json budget.max_model_turns)
	ModelTimeout  time.Duration // each model request
	AgentFlaw     string        // calibration only: a deliberate defect (agent.go)

	HTTPClient *http.Client // nil: a default client
	Log        io.Writer    // progress lines (nil: discarded)
}

// DefaultConfig returns the course's settings: python:3.12, TTL 20 minutes,
// a 10 minute wall clock, 5 minutes per command, at most 4 commands (install,
// one install retry, analysis, and one spare), 30 s to become ready.
func DefaultConfig() Config {
	return Config{
		Image:          "python:3.12",
		SandboxTTL:     20 * time.Minute,
		WallClock:      10 * time.Minute,
		CommandTimeout: 5 * time.Minute,
		MaxSteps:       4,
		ReadyTimeout:   30 * time.Second,
		ModelName:      "gpt-4o-mini",
		AgentMaxTurns:  6,
		ModelTimeout:   20 * time.Second,
	}
}

// Result is the outcome of Run: the summary written to {out}/summary.json,
// the evidence written to {out}/evidence.json, and the process exit code.
type Result struct {
	Summary  summary.Summary
	Evidence Evidence
	ExitCode int
}

// runError ends a run: why it stopped and the classified cause.
type runError struct {
	stop, class, msg string
}

func (e *runError) Error() string { return e.class + ": " + e.msg }

func fail(stop, class, format string, a ...any) *runError {
	return &runError{stop: stop, class: class, msg: fmt.Sprintf(format, a...)}
}

type runner struct {
	cfg    Config
	parent context.Context // cancelled by SIGINT/SIGTERM
	start  time.Time
	budget *Budget
	cl     *osb.Client
	execd  *osb.Execd

	sandboxID   string
	dataAPIUsed bool
	steps       []summary.Step
	degraded    []summary.Degradation // steps done without, non-fatally
	metrics     map[string]float64
	ev          Evidence
	logFile     io.Writer
	mu          sync.Mutex
	cleaned     bool
	agent       *agentState // agent mode only
}

// Run executes the whole pipeline and always writes {out}/summary.json (and
// evidence.json), whatever happens: an error, a budget, a signal (cancel ctx)
// or a panic. The sandbox is destroyed before Run returns.
func Run(ctx context.Context, cfg Config) *Result {
	r := &runner{cfg: cfg, parent: ctx, start: time.Now()}
	r.budget = &Budget{MaxSteps: cfg.MaxSteps, CommandTimeout: cfg.CommandTimeout, WallClock: cfg.WallClock, Start: r.start}
	r.ev.Question = cfg.Question
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fail(StopInternalError, summary.ClassPlatformError, "internal error (panic): %v", p)
			}
		}()
		err = r.run(ctx)
	}()
	if cerr := r.cleanup(); cerr != nil && err == nil {
		err = cerr
	}
	return r.finish(err)
}

func (r *runner) logf(format string, a ...any) {
	line := fmt.Sprintf("[reference %6.1fs] ", time.Since(r.start).Seconds()) + fmt.Sprintf(format, a...) + "\n"
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.Log != nil {
		_, _ = io.WriteString(r.cfg.Log, line)
	}
	if r.logFile != nil {
		_, _ = io.WriteString(r.logFile, line)
	}
}

func (r *runner) note(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	r.ev.Notes = append(r.ev.Notes, msg)
	r.logf("note: %s", msg)
}

// run is the course's workflow, one numbered step per block.
func (r *runner) run(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(r.cfg.Out, "evidence"), 0o755); err != nil {
		return fail(StopInputError, summary.ClassInputError, "cannot create the output directory: %v", err)
	}
	if f, err := os.Create(filepath.Join(r.cfg.Out, "evidence", "run.log")); err == nil {
		defer f.Close()
		r.logFile = f
	}
	var transcript osb.Transcript
	if f, err := os.Create(filepath.Join(r.cfg.Out, "evidence", "transcript.jsonl")); err == nil {
		defer f.Close()
		transcript = &osb.JSONLTranscript{W: f}
	}

	// The wall clock bounds everything below, including waiting on the network.
	if d := r.budget.Deadline(); !d.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}

	// 1. Host: checksum and line count of the CSV, streaming.
	in, err := ReadHostInput(r.cfg.CSV)
	if err != nil {
		return fail(StopInputError, summary.ClassInputError, "cannot read the CSV on the host: %v", err)
	}
	r.ev.Input = in
	r.logf("input %s: %d bytes, %d lines, sha256 %s", in.Path, in.Bytes, in.Lines, in.SHA256)

	opts := []osb.Option{osb.WithSecrets(r.cfg.DataAPIToken)}
	if r.cfg.HTTPClient != nil {
		opts = append(opts, osb.WithHTTPClient(r.cfg.HTTPClient))
	}
	if transcript != nil {
		opts = append(opts, osb.WithTranscript(transcript))
	}
	r.cl, err = osb.New(r.cfg.Domain, r.cfg.APIKey, opts...)
	if err != nil {
		return fail(StopInputError, summary.ClassInputError, "bad OPEN_SANDBOX_DOMAIN: %v", err)
	}
	r.ev.Server = r.cl.BaseURL()

	// 2. Create: TTL 20 min, default deny with only the package index allowed.
	if err := r.create(ctx); err != nil {
		return err
	}
	if err := r.waitReady(ctx); err != nil {
		return err
	}
	r.setupVault(ctx)

	// 3. Upload the CSV (streamed), the script and the question.
	if err := r.upload(ctx); err != nil {
		return err
	}

	// 4. Install, then analyse: two separate steps, so a pip failure and a
	// script failure are never one ambiguous non-zero exit code.
	if err := r.install(ctx); err != nil {
		return err
	}
	// 4b. Agent mode: consult the model (no-op otherwise).
	if err := r.agentLoop(ctx); err != nil {
		return err
	}
	if err := r.analyze(ctx); err != nil {
		return err
	}

	// 5. Read back the artefacts, hashing them as they arrive.
	if err := r.collect(ctx); err != nil {
		return err
	}
	r.agentNotes()

	// 6. Do not trust the sandbox: recompute key numbers on the host.
	return r.verify()
	// 7. Destroy and confirm 404: Run calls r.cleanup() after this returns,
	// whatever happened (error, budget, signal or panic).
}

// ctxErr turns a context failure into the right stop reason.
func (r *runner) ctxErr(ctx context.Context, what string) *runError {
	if r.parent.Err() != nil {
		return fail(StopInterrupted, summary.ClassBudget, "interrupted by a signal during %s", what)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fail(StopWallClock, summary.ClassBudget, "wall-clock budget of %s exhausted during %s", r.cfg.WallClock, what)
	}
	return nil
}

func (r *runner) create(ctx context.Context) error {
	ttl := int(r.cfg.SandboxTTL / time.Second)
	rules := []osb.NetworkRule{
		{Action: "allow", Target: "pypi.org"},
		{Action: "allow", Target: "files.pythonhosted.org"},
	}
	req := osb.CreateSandboxRequest{
		Image:          &osb.ImageSpec{URI: r.cfg.Image},
		Entrypoint:     []string{"tail", "-f", "/dev/null"},
		Timeout:        &ttl,
		ResourceLimits: map[string]string{"cpu": "1", "memory": "2Gi"},
		Metadata:       runLabel("capstone-reference", r.cfg.RunID),
	}
	if u := r.dataAPI(); u != nil {
		rules = append(rules, osb.NetworkRule{Action: "allow", Target: u.Hostname()})
		if r.cfg.DataAPIToken != "" {
			req.CredentialProxy = &osb.CredentialProxy{Enabled: true}
		}
	}
	req.NetworkPolicy = &osb.NetworkPolicy{DefaultAction: "deny", Egress: rules}
	if r.cfg.Agent && r.cfg.AgentFlaw == FlawEnvSecrets {
		// Calibration only (agent.go): the keys in the sandbox's environment.
		req.Env = map[string]string{"CAPSTONE_DATA_API_TOKEN": r.cfg.DataAPIToken, "OPEN_SANDBOX_API_KEY": r.cfg.APIKey}
	}
	r.ev.Policy = req.NetworkPolicy
	r.ev.CredentialProxy = req.CredentialProxy != nil

	for attempt := 1; attempt <= 2; attempt++ {
		res, err := r.cl.CreateSandbox(ctx, req)
		if res != nil && res.Status != 0 {
			r.ev.Calls = append(r.ev.Calls, record("create", res.Meta))
		}
		if err != nil {
			if ce := r.ctxErr(ctx, "create"); ce != nil {
				return ce
			}
			if res != nil && res.OK() {
				return fail(StopCreateFailed, summary.ClassPlatformError, "create answered %s but the body is unusable: %v", res.StatusLine, err)
			}
			return fail(StopCreateFailed, summary.ClassPlatformError, "cannot reach the lifecycle server: %v", err)
		}
		if res.OK() {
			if res.Value.ID == "" {
				return fail(StopCreateFailed, summary.ClassPlatformError, "create answered %s without a sandbox id", res.StatusLine)
			}
			r.sandboxID = res.Value.ID
			r.ev.SandboxID = r.sandboxID
			if res.Status != http.StatusAccepted {
				r.note("create answered %d, the contract says 202", res.Status)
			}
			r.logf("created sandbox %s (%s, state %s)", r.sandboxID, res.StatusLine, res.Value.Status.State)
			return nil
		}
		apiErr := res.APIError()
		switch res.Status {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			wait, ok := retryAfter(res.Headers.Get("Retry-After"))
			if attempt == 1 && ok && wait <= 30*time.Second && r.budget.Remaining(time.Now()) > wait+time.Minute {
				r.note("create answered %d (%v); retrying once after Retry-After %s", res.Status, apiErr, wait)
				select {
				case <-time.After(wait):
					continue
				case <-ctx.Done():
					return r.ctxErr(ctx, "create backoff")
				}
			}
			return fail(StopCreateFailed, summary.ClassCapacity, "no capacity: create answered %d (%v); not retried further", res.Status, apiErr)
		case http.StatusGatewayTimeout:
			return fail(StopCreateFailed, summary.ClassCapacity, "the platform timed out provisioning the sandbox (504: %v)", apiErr)
		case http.StatusUnauthorized, http.StatusForbidden:
			return fail(StopCreateFailed, summary.ClassPlatformError, "the API key was rejected (%d: %v)", res.Status, apiErr)
		default:
			return fail(StopCreateFailed, summary.ClassPlatformError, "create failed with %d: %v", res.Status, apiErr)
		}
	}
	return fail(StopCreateFailed, summary.ClassCapacity, "no capacity after one retry")
}

func retryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t)), true
	}
	return 0, false
}

// dataAPI parses CAPSTONE_DATA_API_URL (nil when unset or unusable).
func (r *runner) dataAPI() *url.URL {
	if r.cfg.DataAPIURL == "" {
		return nil
	}
	u, err := url.Parse(r.cfg.DataAPIURL)
	if err != nil || u.Hostname() == "" {
		r.note("ignoring CAPSTONE_DATA_API_URL: not a URL with a host")
		return nil
	}
	return u
}

// waitReady resolves the execd endpoint and polls /ping, as the SDKs do
// (every 200 ms, up to ReadyTimeout).
func (r *runner) waitReady(ctx context.Context) error {
	ep, err := r.cl.GetEndpoint(ctx, r.sandboxID, osb.DefaultExecdPort, false)
	if ep != nil && ep.Status != 0 {
		r.ev.Calls = append(r.ev.Calls, record("endpoint 44772", ep.Meta))
	}
	if err != nil || !ep.OK() {
		if ce := r.ctxErr(ctx, "endpoint lookup"); ce != nil {
			return ce
		}
		return r.goneOr(ctx, fail(StopSandboxNotReady, summary.ClassPlatformError, "cannot resolve the execd endpoint: %v", errOrStatus(err, metaOf(ep))))
	}
	r.execd, err = r.cl.Execd(ep.Value)
	if err != nil {
		return fail(StopSandboxNotReady, summary.ClassPlatformError, "bad execd endpoint %q: %v", ep.Value.Endpoint, err)
	}
	ready, rd := r.execd.WaitReady(ctx, 200*time.Millisecond, r.cfg.ReadyTimeout)
	if ready {
		r.logf("execd ready at %s after %d ping(s)", r.execd.BaseURL(), rd.Attempts)
		return nil
	}
	if ce := r.ctxErr(ctx, "readiness"); ce != nil {
		return ce
	}
	return r.goneOr(ctx, fail(StopSandboxNotReady, summary.ClassPlatformError, "execd did not answer /ping within %s (%d attempts, last: %s)",
		r.cfg.ReadyTimeout, rd.Attempts, errOrStatus(rd.LastErr, metaOf(rd.Last))))
}

// setupVault posts the data API token to the sandbox's credential vault so
// the proxy injects it in flight; the sandbox itself only ever sees a
// placeholder. Failure is recorded and the analysis runs without external data.
func (r *runner) setupVault(ctx context.Context) {
	u := r.dataAPI()
	if u == nil || r.cfg.DataAPIToken == "" {
		if u != nil {
			r.dataAPIUsed = true // no credential needed
		}
		return
	}
	ep, err := r.cl.GetEndpoint(ctx, r.sandboxID, osb.DefaultEgressPort, false)
	if ep != nil && ep.Status != 0 {
		r.ev.Calls = append(r.ev.Calls, record("endpoint 18080", ep.Meta))
	}
	if err != nil || !ep.OK() {
		r.note("credential vault not set up: cannot resolve the egress endpoint (%s); the analysis runs without external data", errOrStatus(err, metaOf(ep)))
		return
	}
	eg, err := r.cl.Egress(ep.Value)
	if err != nil {
		r.note("credential vault not set up: %v", err)
		return
	}
	scheme := u.Scheme
	port := 443
	if scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	res, err := eg.CreateVault(ctx, osb.VaultCreate{
		Credentials: []osb.VaultCredential{{Name: "data-api", Source: osb.VaultCredentialSrc{Type: "inline", Value: r.cfg.DataAPIToken}}},
		Bindings: []osb.VaultBinding{{Name: "data-api",
			Match: osb.VaultMatch{Hosts: []string{u.Hostname()}, Schemes: []string{scheme}, Ports: []int{port}},
			Auth:  osb.VaultAuth{Type: "bearer", Credential: "data-api"}}},
	})
	if res != nil && res.Status != 0 {
		r.ev.Calls = append(r.ev.Calls, record("credential-vault", res.Meta))
	}
	if err != nil || !res.OK() {
		r.note("credential vault not set up (%s); the analysis runs without external data", errOrStatus(err, metaOf(res)))
		return
	}
	r.dataAPIUsed = true
	r.logf("credential vault revision %d binds the data API token to %s", res.Value.Revision, u.Host)
}

func (r *runner) upload(ctx context.Context) error {
	f, err := os.Open(r.cfg.CSV)
	if err != nil {
		return fail(StopInputError, summary.ClassInputError, "cannot open the CSV: %v", err)
	}
	defer f.Close()
	res, err := r.execd.Upload(ctx,
		osb.UploadFile{Path: SandboxInput, Content: f, Mode: 644},
		osb.UploadFile{Path: SandboxScript, Content: strings.NewReader(string(AnalysisScript)), Mode: 644},
		osb.UploadFile{Path: SandboxQuestion, Content: strings.NewReader(r.cfg.Question + "\n"), Mode: 644},
	)
	if res != nil && res.Status != 0 {
		r.ev.Calls = append(r.ev.Calls, record("upload", res.Meta))
	}
	if err != nil || !res.OK() {
		if ce := r.ctxErr(ctx, "upload"); ce != nil {
			return ce
		}
		return r.goneOr(ctx, fail(StopUploadFailed, summary.ClassPlatformError, "upload failed: %s", errOrStatus(err, metaOf(res))))
	}
	r.ev.Uploads = res.Value.Files
	if got := res.Value.Files[0]; got.SHA256 != r.ev.Input.SHA256 || got.Size != r.ev.Input.Bytes {
		return fail(StopUploadFailed, summary.ClassPlatformError, "the uploaded CSV (%d bytes, %s) differs from the host file (%d bytes, %s)",
			got.Size, got.SHA256, r.ev.Input.Bytes, r.ev.Input.SHA256)
	}
	r.logf("uploaded %s (%d bytes, sha256 matches the host), %s, %s", SandboxInput, res.Value.Files[0].Size, SandboxScript, SandboxQuestion)
	return nil
}

// command runs one step in the sandbox under the budgets and records it.
// It returns the classification of a failure (empty Class = success) or an
// error that ends the run regardless of the step (budget, signal, gone).
func (r *runner) command(ctx context.Context, name, cmd string, env map[string]string) (Classification, error) {
	if err := r.budget.BeginStep(time.Now()); err != nil {
		var be *BudgetError
		errors.As(err, &be)
		return Classification{}, fail(be.StopReason, summary.ClassBudget, "before %q: %s", name, be.Message)
	}
	timeout, byWallClock := r.budget.CommandTimeoutAt(time.Now())
	// execd enforces the timeout itself; the grace lets its error event arrive.
	cctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	defer cancel()
	r.logf("step %q: %s (timeout %s)", name, cmd, timeout.Round(time.Second))
	started := time.Now()
	res, err := r.execd.Run(cctx, osb.CommandRequest{Command: cmd, Cwd: "/workspace", TimeoutMs: timeout.Milliseconds(), Envs: env})
	ran := time.Since(started)
	step := summary.Step{Name: name, Command: cmd, DurationMs: ran.Milliseconds()}
	var stderrAll string
	var exit *int
	if res != nil && res.Status == http.StatusOK {
		ex := res.Value
		exit = ex.ExitCode
		stderrAll = ex.StderrText()
		if ex.Error != nil && exit == nil { // e.g. spawn failure: the reason is in the error event
			stderrAll += fmt.Sprintf("[execd] %s: %s\n", ex.Error.EName, ex.Error.EValue)
		}
		var t1, t2 bool
		step.Stdout, t1 = Clip(ex.StdoutText(), OutputLimit)
		step.Stderr, t2 = Clip(stderrAll, OutputLimit)
		step.Truncated = t1 || t2
	} else if res != nil && res.Status != 0 {
		step.Stderr, step.Truncated = Clip(fmt.Sprintf("[execd] %s: %s", res.StatusLine, res.Body), OutputLimit)
	}
	step.ExitCode = exit
	r.steps = append(r.steps, step)
	r.logf("step %q: exit %s after %s", name, fmtExit(exit), ran.Round(time.Millisecond))

	if err != nil {
		if ce := r.ctxErr(ctx, fmt.Sprintf("step %q", name)); ce != nil {
			return Classification{}, ce
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return Classification{Class: summary.ClassTimeout, Reason: fmt.Sprintf("no result within %s", timeout+10*time.Second)}, nil
		}
		return Classification{}, r.goneOr(ctx, fail(StopAnalysisFailed, summary.ClassPlatformError, "step %q: the command stream broke: %v", name, err))
	}
	if res.Status != http.StatusOK {
		return Classification{}, r.goneOr(ctx, fail(StopAnalysisFailed, summary.ClassPlatformError, "step %q: execd answered %s", name, res.StatusLine))
	}
	if exit != nil && *exit == 0 {
		return Classification{}, nil
	}
	if exit == nil || *exit == -1 {
		if gone := r.goneOr(ctx, nil); gone != nil {
			return Classification{}, gone
		}
	}
	c := Classify(exit, stderrAll, ran.Seconds(), timeout.Seconds())
	if c.Class == summary.ClassTimeout && byWallClock {
		return Classification{}, fail(StopWallClock, summary.ClassBudget, "step %q was stopped by the wall-clock budget of %s", name, r.cfg.WallClock)
	}
	return c, nil
}

// install runs the install step: at most two attempts, and the second only
// for a failure that a retry can fix (a transient network error). A policy
// denial or a missing package is deterministic: retrying would only burn budget.
func (r *runner) install(ctx context.Context) error {
	const maxAttempts = 2
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		name := "install"
		if attempt > 1 {
			name = fmt.Sprintf("install (attempt %d)", attempt)
		}
		c, err := r.command(ctx, name, InstallCommand, installEnv)
		if err != nil {
			return err
		}
		a := Attempt{Step: name, Attempt: attempt, Class: c.Class, Reason: c.Reason}
		if c.Class == "" {
			a.Decision = "succeeded"
			r.ev.Install = append(r.ev.Install, a)
			return nil
		}
		exit := r.steps[len(r.steps)-1].ExitCode
		if c.Unreachable {
			// No upstream (offline target): not a denial, and retrying cannot
			// help. Go on without the package: analyze.py falls back to a
			// plain table without tabulate. Recorded, never silent.
			a.Decision = "skipped: package index unreachable, continuing without " + InstallPackage
			r.ev.Install = append(r.ev.Install, a)
			r.degraded = append(r.degraded, summary.Degradation{Step: name,
				Reason: fmt.Sprintf("install skipped (exit %s): %s; the analysis runs without %s (plain tables)", fmtExit(exit), c.Reason, InstallPackage)})
			r.note("install attempt %d: the package index is unreachable (%s); continuing without %s", attempt, c.Reason, InstallPackage)
			return nil
		}
		if c.Retryable && attempt < maxAttempts {
			a.Decision = "retry: " + c.Reason
			r.ev.Install = append(r.ev.Install, a)
			r.note("install attempt %d failed (%s); retrying once because the cause is transient", attempt, c.Reason)
			continue
		}
		if c.Retryable {
			a.Decision = fmt.Sprintf("stop: still failing after %d attempts", attempt)
		} else {
			a.Decision = "stop: not retryable (" + c.Class + ")"
		}
		r.ev.Install = append(r.ev.Install, a)
		return fail(StopInstallFailed, c.Class, "install failed (exit %s) after %d attempt(s): %s", fmtExit(exit), attempt, c.Reason)
	}
	return nil
}

func (r *runner) analyze(ctx context.Context) error {
	env := map[string]string{}
	if r.dataAPIUsed {
		env["DATA_API_URL"] = r.cfg.DataAPIURL
		// A placeholder: the egress proxy replaces the Authorization header
		// with the real token in flight. The real token never enters here.
		env["DATA_API_TOKEN"] = "placeholder-injected-by-credential-vault"
	}
	c, err := r.command(ctx, "analyze", AnalyzeCommand, env)
	if err != nil {
		return err
	}
	if c.Class == "" {
		return nil
	}
	exit := r.steps[len(r.steps)-1].ExitCode
	stop := StopAnalysisFailed
	if c.Class == summary.ClassInputError {
		stop = StopInputError
	}
	return fail(stop, c.Class, "analysis failed (exit %s): %s", fmtExit(exit), c.Reason)
}

// collect downloads report.md, chart.png and metrics.json, hashing each while
// it streams (the minimal proof that the artefact exists and is complete).
func (r *runner) collect(ctx context.Context) error {
	if _, err := r.download(ctx, SandboxReport, filepath.Join(r.cfg.Out, "report.md"), nil); err != nil {
		return err
	}
	art, err := r.download(ctx, SandboxChart, filepath.Join(r.cfg.Out, "chart.png"), nil)
	if err != nil {
		return err
	}
	if !isPNG(filepath.Join(r.cfg.Out, "chart.png")) {
		return fail(StopArtifactFailed, summary.ClassScriptError, "chart.png (%d bytes) is not a PNG image", art.Bytes)
	}
	var buf strings.Builder
	if _, err := r.download(ctx, SandboxMetrics, "", &limitWriter{w: &buf, n: 4 << 20}); err != nil {
		return err
	}
	m, err := parseMetrics([]byte(buf.String()))
	if err != nil {
		return fail(StopArtifactFailed, summary.ClassScriptError, "metrics.json: %v", err)
	}
	r.metrics = m.Metrics
	r.ev.SandboxInputSHA256 = m.InputSHA256
	if m.InputSHA256 != "" && m.InputSHA256 != r.ev.Input.SHA256 {
		return fail(StopVerifyFailed, summary.ClassScriptError, "the sandbox hashed a different input (%s) than the host (%s)", m.InputSHA256, r.ev.Input.SHA256)
	}
	return nil
}

// download streams one file to path (or to w when path is "").
func (r *runner) download(ctx context.Context, remote, path string, w io.Writer) (*Artifact, error) {
	var f *os.File
	if path != "" {
		var err error
		if f, err = os.Create(path); err != nil {
			return nil, fail(StopArtifactFailed, summary.ClassPlatformError, "cannot write %s: %v", path, err)
		}
		defer f.Close()
		w = f
	}
	res, err := r.execd.Download(ctx, remote, w)
	if res != nil && res.Status != 0 {
		r.ev.Calls = append(r.ev.Calls, record("download "+remote, res.Meta))
	}
	if err != nil {
		if ce := r.ctxErr(ctx, "download"); ce != nil {
			return nil, ce
		}
		return nil, r.goneOr(ctx, fail(StopArtifactFailed, summary.ClassPlatformError, "downloading %s: %v", remote, err))
	}
	if !res.OK() {
		if path != "" {
			f.Close()
			os.Remove(path)
		}
		if res.Status == http.StatusNotFound {
			return nil, r.goneOr(ctx, fail(StopArtifactFailed, summary.ClassScriptError, "the analysis did not produce %s (404)", remote))
		}
		return nil, r.goneOr(ctx, fail(StopArtifactFailed, summary.ClassPlatformError, "downloading %s: %s", remote, errOrStatus(nil, res.Meta)))
	}
	a := Artifact{Remote: remote, Saved: path, Bytes: res.Value.Size, SHA256: res.Value.SHA256}
	r.ev.Artifacts = append(r.ev.Artifacts, a)
	r.logf("downloaded %s: %d bytes, sha256 %s", remote, a.Bytes, a.SHA256)
	return &a, nil
}

// verify is step 6: independent host-side recomputation.
func (r *runner) verify() error {
	h, err := RecomputeHost(r.cfg.CSV)
	if err != nil {
		return fail(StopVerifyFailed, summary.ClassScriptError, "the host could not recompute the key numbers (%v) although the sandbox reported success", err)
	}
	r.ev.Host = h
	r.ev.Verification = CompareWithHost(h, r.metrics)
	var bad []string
	for _, c := range r.ev.Verification {
		if !c.Match {
			claimed := "missing"
			if c.Claimed != nil {
				claimed = strconv.FormatFloat(*c.Claimed, 'g', -1, 64)
			}
			bad = append(bad, fmt.Sprintf("%s: sandbox %s, host %s", c.Name, claimed, strconv.FormatFloat(c.Host, 'g', -1, 64)))
		}
	}
	if len(bad) > 0 {
		return fail(StopVerifyFailed, summary.ClassScriptError,
			"host recomputation disagrees (%s); suspect the reading first (encoding %s, delimiter %q, header), then the script",
			strings.Join(bad, "; "), h.Encoding, h.Delimiter)
	}
	r.logf("host recomputation agrees on %d numbers (rows %d, columns %d, first numeric column %q)", len(r.ev.Verification), h.Rows, h.Columns, h.FirstNumeric)
	return nil
}

// goneOr checks whether the sandbox still exists. If GET says 404 the run
// ends as sandbox_gone (not retryable: the sandbox and its files are gone);
// otherwise it returns orElse.
func (r *runner) goneOr(ctx context.Context, orElse *runError) error {
	if r.sandboxID == "" {
		return errOrNil(orElse)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// A real server stops the container (breaking the stream) before its
	// delete finishes (about a second), so GET may still find the sandbox for
	// a moment: look again for a few seconds. Not after a signal or the wall
	// clock: then the run is stopping anyway.
	deadline := time.Now().Add(goneGrace)
	for {
		res, err := r.cl.GetSandbox(cctx, r.sandboxID)
		if err == nil && res.Status == http.StatusNotFound {
			r.ev.GoneObserved = true
			return fail(StopSandboxGone, summary.ClassSandboxGone, "the sandbox %s no longer exists (GET 404): it was deleted or expired mid-run; not retryable", r.sandboxID)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return errOrNil(orElse)
		}
		select {
		case <-cctx.Done():
			return errOrNil(orElse)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// goneGrace is how long a broken stream waits for GET to show the sandbox gone.
var goneGrace = 4 * time.Second

func errOrNil(e *runError) error {
	if e == nil {
		return nil
	}
	return e
}

// cleanup is step 7: destroy, then prove it with a GET that answers 404. It
// runs on a fresh context, so an expired wall clock or a signal cannot stop it.
func (r *runner) cleanup() error {
	if r.sandboxID == "" || r.cleaned {
		return nil
	}
	r.cleaned = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.parent), 30*time.Second)
	defer cancel()
	c := &Cleanup{}
	r.ev.Cleanup = c
	del, err := r.cl.DeleteSandbox(ctx, r.sandboxID)
	if err != nil {
		c.DeleteError = err.Error()
	} else {
		c.DeleteStatus = del.Status
		r.ev.Calls = append(r.ev.Calls, record("delete", del.Meta))
	}
	// Deletion may take a moment to show; look a few times, never forever.
	for i := 0; i < 10; i++ {
		get, err := r.cl.GetSandbox(ctx, r.sandboxID)
		if err == nil {
			c.GetStatus = get.Status
			if get.Status == http.StatusNotFound {
				r.ev.Calls = append(r.ev.Calls, record("get after delete", get.Meta))
				c.Confirmed = true
				break
			}
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			i = 10
		}
	}
	if c.Confirmed {
		r.logf("sandbox %s destroyed: DELETE %d, GET %d", r.sandboxID, c.DeleteStatus, c.GetStatus)
		return nil
	}
	r.logf("sandbox %s NOT confirmed destroyed: DELETE %d %s, GET %d", r.sandboxID, c.DeleteStatus, c.DeleteError, c.GetStatus)
	return fail(StopCleanupFailed, summary.ClassPlatformError, "the sandbox %s was not confirmed destroyed (DELETE %d, GET %d); its TTL of %s is the backstop",
		r.sandboxID, c.DeleteStatus, c.GetStatus, r.cfg.SandboxTTL)
}

// finish writes summary.json and evidence.json and picks the exit code.
func (r *runner) finish(err error) *Result {
	res := &Result{}
	s := summary.Summary{
		SandboxID:  r.sandboxID,
		DurationMs: time.Since(r.start).Milliseconds(),
		StopReason: StopCompleted,
		Metrics:    r.metrics,
		Steps:      r.steps,
		Degraded:   r.degraded,
	}
	if r.cfg.Agent {
		s.Budget = &summary.Budget{MaxModelTurns: r.cfg.AgentMaxTurns}
	}
	if err != nil {
		var re *runError
		if !errors.As(err, &re) {
			re = fail(StopInternalError, summary.ClassPlatformError, "%v", err)
		}
		if r.ev.Cleanup != nil && !r.ev.Cleanup.Confirmed && re.stop != StopCleanupFailed {
			re.msg += fmt.Sprintf(" (and the sandbox was not confirmed destroyed: DELETE %d, GET %d)", r.ev.Cleanup.DeleteStatus, r.ev.Cleanup.GetStatus)
		}
		s.StopReason = re.stop
		s.Error = &summary.Error{Class: re.class, Message: re.msg}
		s.ExitCode = 1
		r.logf("FAILED: %s: %s", re.stop, re.msg)
	} else {
		r.logf("done: %d steps, %d metrics, sandbox %s destroyed", len(r.steps), len(r.metrics), r.sandboxID)
	}
	res.Summary = s
	res.ExitCode = s.ExitCode
	res.Evidence = r.ev
	if r.cfg.Out != "" {
		if err := os.MkdirAll(r.cfg.Out, 0o755); err == nil {
			if werr := summary.Write(filepath.Join(r.cfg.Out, "summary.json"), &s); werr != nil {
				r.logf("summary.json: %v", werr)
			}
			if werr := writeJSON(filepath.Join(r.cfg.Out, "evidence.json"), &r.ev); werr != nil {
				r.logf("evidence.json: %v", werr)
			}
		}
	}
	return res
}

func fmtExit(e *int) string {
	if e == nil {
		return "none"
	}
	return strconv.Itoa(*e)
}

func metaOf[T any](r *osb.Result[T]) osb.Meta {
	if r == nil {
		return osb.Meta{}
	}
	return r.Meta
}

func errOrStatus(err error, m osb.Meta) string {
	if err != nil {
		return err.Error()
	}
	if ae := m.APIError(); ae != nil {
		return fmt.Sprintf("%s: %v", m.StatusLine, ae)
	}
	return m.StatusLine
}
