package steps

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/indexdeny"
	"github.com/osb-capstone/acceptance/harness/residual"
	"github.com/osb-capstone/acceptance/mock-server/wire"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/vanish"

	"github.com/cucumber/godog"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Fault drills D1, D2, D3 and D5.

func registerDrillSteps(sc registrar) {
	sc.Step(`^the platform denies "([^"]*)" and "([^"]*)" as a simulated fault$`, denyPackageIndex)
	sc.Step(`^the subject's summary classifies the error as "([^"]*)"$`, errorClassIs)
	sc.Step(`^a failed install step shows stderr that identifies a network denial$`, installStderrShowsDenial)
	sc.Step(`^the install was attempted at most (\d+) times and the package index was asked at most (\d+) times$`, boundedRetries)
	sc.Step(`^the denials of the package index are recorded in the audit$`, indexDenialsAudited)
	sc.Step(`^the subject reached for the package index$`, reachedForIndex)
	sc.Step(`^the subject made at most (\d+) calls to the vanished sandbox after it disappeared$`, boundedCallsAfterVanish)
	sc.Step(`^the subject's sandbox will disappear while the subject is working in it$`, expireAfterFirstCommand)
	sc.Step(`^the sandbox disappeared while the subject was running$`, sandboxDisappeared)
	sc.Step(`^the subject created no further sandbox after it disappeared$`, noNewSandboxAfterExpiry)
	sc.Step(`^the platform answers every create with 429 and Retry-After (\d+) seconds as a simulated fault$`, capacityFault)
	sc.Step(`^the subject tried to create at most (\d+) times$`, boundedCreates)
	sc.Step(`^the subject waited at least the Retry-After between its create attempts$`, respectedRetryAfter)
	sc.Step(`^the subject is run on fixture "([^"]*)" and killed with SIGKILL once it has made progress in its sandbox$`, runAndKill)
	sc.Step(`^the subject's sandbox, if still alive, has an expiry of at most (\d+) seconds after its creation$`, residualHasTTL)
	sc.Step(`^the submission's reap command, given the killed run's id, removes the residual sandbox within its TTL$`, reapRemoves)
}

func denyPackageIndex(ctx context.Context, a, b string) error {
	s := state(ctx)
	// Keyed to the run's own key: the sandboxes other submissions create
	// meanwhile still reach the index, so the drill need not run alone.
	d := &drill{Name: "egress-deny-package-index", keyed: true}
	if !s.env.mock() {
		// A real target: through the subject's sandbox's own egress sidecar
		// (its runtime policy API), as soon as the sandbox exists (d1_policy.go, harness/indexdeny).
		s.env.denyByPolicyAPI(d, []string{a, b})
		s.drill = d
		return nil
	}
	adm := s.env.client.Admin()
	d.keyedFault("/_mock/faults/egress-deny",
		func(c context.Context, fp string) (*osb.Result[osb.Empty], error) {
			return adm.EgressDenyForKey(c, fp, []string{a, b})
		},
		adm.ClearEgressDenyForKey)
	s.drill = d
	return nil
}

func errorClassIs(ctx context.Context, class string) error {
	_, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	if r.sum.Error == nil {
		return failf("summary.json has error null; the drill expects class %q", class)
	}
	if r.sum.Error.Class != class {
		seen := ""
		if s := state(ctx); s.drill != nil && s.drill.Name == d2DrillName && r.faultSandbox != "" {
			// D2: the expectation follows from the symptom the subject saw.
			answers, _ := s.env.d2RunAnswers(ctx, r)
			seen = "; after the disappearance the subject saw: " + vanish.Judge(answers).String()
		}
		return failf("summary.json classifies the error as %q (%s), the drill expects %q%s", r.sum.Error.Class, quoted(clip(r.sum.Error.Message, 200)), class, seen)
	}
	return nil
}

// installStderrShowsDenial is D1's observability check: a failed step's
// output identifies the network failure. Denial evidence (NXDOMAIN, 403, no
// route) passes; a failure that only shows the index unreachable
// (SERVFAIL/EAI_AGAIN, refused) passes only where the audit shows the
// platform denied the index, so it was the denial the subject met.
func installStderrShowsDenial(ctx context.Context) error {
	s, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	var unreachStep, unreachSign string
	for _, st := range r.sum.Steps {
		if st.ExitCode == nil || *st.ExitCode == 0 {
			continue
		}
		switch kind, sign := indexdeny.ClassifyNetwork(st.Stderr + "\n" + st.Stdout); kind {
		case indexdeny.NetDenied:
			s.note("step %q: %s", st.Name, clip(sign, 120))
			return nil
		case indexdeny.NetUnreachable:
			if unreachStep == "" {
				unreachStep, unreachSign = st.Name, sign
			}
		}
	}
	if unreachStep == "" {
		return failf("no failed step's stderr identifies a network denial (looked for NXDOMAIN-style and connection errors)")
	}
	if !s.env.mock() {
		// The sidecar answers a denied name NXDOMAIN; an index that was only
		// unreachable is not the drill's denial, and no audit can say more.
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"step %q failed with %q: the index was unreachable, which by itself is not a denial (SERVFAIL/EAI_AGAIN or refused); the egress sidecar answers a denied name NXDOMAIN, and target %s records no egress decisions to say more",
			unreachStep, clip(unreachSign, 120), s.env.opt.Target.Kind)
	}
	// The step shows the index unreachable, not denied: only the platform's
	// record of its decision can say the failure was the denial.
	_, _, saw, err := audited(ctx)
	if err != nil {
		return err
	}
	denied := indexdeny.CountEvents(saw.Events).Denied
	if denied == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"step %q failed with %q: the index was unreachable, which by itself is not a denial (SERVFAIL/EAI_AGAIN or refused), and no denial of a package index host is in the audit, so the subject did not meet the denial",
			unreachStep, clip(unreachSign, 120))
	}
	s.note("step %q: %s (the index unreachable; the audit shows %d denial(s) of package index hosts, so this is the denial)", unreachStep, clip(unreachSign, 120), denied)
	return nil
}

// boundedRetries is D1's own property, "the agent does not retry
// indefinitely": a subject that retries the denied index without bound
// violates it (violationf: it fails D1 whatever the scenario's other checks
// say). It reads the audit (or, on a real target, the recording proxy's
// commands), never the subject's summary, so it is checked before the
// reporting steps of the scenario.
func boundedRetries(ctx context.Context, maxAttempts, maxAsks int) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if !s.env.mock() {
		err := installAttemptsReal(ctx, s, r, maxAttempts)
		if err != nil && !isHarnessFault(err) && !errors.Is(err, godog.ErrSkip) {
			return violationf("%w", err) // its only failure is the retry bound
		}
		return err
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"))
	c := indexdeny.CountEvents(saw.Events)
	attempts, asks := c.Installs, c.Asks
	s.note("install attempts %d, package-index lookups/connections %d", attempts, asks)
	if attempts > maxAttempts {
		return violationf("the subject ran %d install commands; a denied index must not be retried more than %d times", attempts, maxAttempts)
	}
	if asks > maxAsks {
		return violationf("the package index was asked %d times; more than %d is retrying without bound", asks, maxAsks)
	}
	return nil
}

// reachedForIndex is D1's precondition: the denial is only met by a
// subject that tries to install something (a pip command, or any attempt
// to reach a package index host).
func reachedForIndex(ctx context.Context) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if !s.env.mock() {
		return reachedForIndexReal(ctx, s, r)
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"))
	c := indexdeny.CountEvents(saw.Events)
	if c.Installs == 0 && c.Asks == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"no install step was attempted (no pip command ran and no package index host was asked in the subject's %d sandbox(es); it exited %d), so the denial was never met",
			len(saw.Created), r.Res.ExitCode)
	}
	if r.sum != nil && c.Denied == 0 {
		if step, sign, ok := indexdeny.IndexUnreachable(r.sum.Steps); ok {
			return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
				"the target has no upstream: the subject's install (step %q) met a package index that could not be reached at all (%s), "+
					"not the drill's denial (none is on record), so whether it tells a denial from a script error was not measured", step, sign)
		}
	}
	return nil
}

func indexDenialsAudited(ctx context.Context) error {
	// A security check: it needs the audit (or, on a real target, the
	// sidecar's own record), never the subject's own summary.
	if s, r, err := ran(ctx); err == nil && !s.env.mock() {
		return indexDeniedReal(ctx, s, r)
	}
	s, _, saw, err := securityAudited(ctx, "the bundled server's audit")
	if err != nil {
		return err
	}
	c := indexdeny.CountEvents(saw.Events)
	if ev := c.Allowed; ev != nil {
		return violationf("the sandbox reached %s (%s allowed) while the platform denied the package index", ev.Egress.Host, ev.Egress.Phase)
	}
	denied := c.Asks
	if denied == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "no package index host was asked from the subject's sandbox (its install, if any, never reached the network), so no denial was met")
	}
	if err := egressNotEnforced(ctx, s.env, fmt.Sprintf("the egress gateway denied and recorded %d request(s) of the subject's sandboxes for package index hosts", denied)); err != nil {
		return err
	}
	s.note("%d denials of package index hosts audited", denied)
	return nil
}

func expireAfterFirstCommand(ctx context.Context) error {
	s := state(ctx)
	// It expires the run's own sandbox only: the drill need not run alone.
	d := &drill{Name: d2DrillName, Available: func(*Env) (bool, string) { return true, "" }, keyed: true}
	d.Opts.hook = func(ctx context.Context, r *subjectRun, stop func()) {
		// Mid-run: after the subject's first successful execd or file call
		// on its sandbox, as observed (progress.go).
		if !s.env.mock() {
			// No admin API: the harness destroys the sandbox itself, as the
			// course's "manually destroy the sandbox during the analysis".
			// A real DELETE is not atomic (Docker: kill, remove, then the
			// sidecar; a GET meanwhile still finds the sandbox, the
			// subject's own DELETE gets 409): the subject's recording proxy
			// answers the sandbox as an unknown one from the moment the
			// DELETE is sent, so the subject meets a sandbox that is gone,
			// as on the bundled server, not one halfway through its removal.
			s.env.whenProgressed(ctx, r, func(id string) {
				c, cancel := ctxTimeout(context.WithoutCancel(ctx), 60*time.Second)
				defer cancel()
				at := time.Now()
				if r.Proxy != nil {
					r.Proxy.Vanish(id)
				}
				r.faultAt, r.faultSandbox = at, id
				res, err := s.env.client.DeleteSandbox(c, id)
				switch {
				case err != nil:
					r.faultErr = err.Error()
				case !res.OK():
					r.faultErr = fmt.Sprintf("%s → %s: %s", res.RequestLine, res.StatusLine, excerpt(res.Body, 200))
				default:
					r.faultDone = time.Now()
				}
			})
			return
		}
		s.env.whenProgressed(ctx, r, func(id string) {
			// The subject may notice the expiry and exit before the admin call
			// returns, which cancels ctx: the fault must not depend on it.
			c, cancel := ctxTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			at := time.Now()
			res, err := s.env.client.Admin().Expire(c, id)
			if err == nil && res.OK() {
				r.faultAt = at
				r.faultSandbox = id
			}
		})
	}
	s.drill = d
	return nil
}

// sandboxDisappeared is the drill's precondition: without it nothing after it means anything.
func sandboxDisappeared(ctx context.Context) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if r.faultSandbox == "" {
		saw, _ := r.Saw(ctx)
		if why := s.env.progressUnobserved(r); why != "" {
			return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s", why)
		}
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the subject ended (after %s, exit %d, %d sandbox(es) created) before its sandbox could be made to disappear mid-run (after its first execd or file call)",
			r.Res.Duration.Round(time.Millisecond), r.Res.ExitCode, len(saw.Created))
	}
	if r.faultErr != "" {
		// The target did not remove the sandbox: a fault of the target, not
		// the subject's (its proxy showed the sandbox gone, the server kept it).
		return harnessf("the harness deleted the subject's sandbox %s mid-run (after %s), but the target did not remove it: %s",
			r.faultSandbox, r.faultCause, r.faultErr)
	}
	s.note("sandbox %s disappeared %s into the run, after the subject's first successful execd or file call on it (%s)",
		r.faultSandbox, r.faultAt.Sub(r.Started).Round(time.Millisecond), r.faultCause)
	if !r.faultDone.IsZero() {
		s.note("the harness deleted it on the target, which took %s (DELETE → 204); the subject's recording proxy answered it as an unknown sandbox from the DELETE's start",
			r.faultDone.Sub(r.faultAt).Round(time.Millisecond))
	}
	// Judged on what the subject saw: the course's 404 or connection
	// failure, or a symptom the drill did not intend (a 5xx of the grader's
	// own server or the target's), which is the platform's fault.
	answers, err := s.env.d2RunAnswers(ctx, r)
	if err != nil {
		return harnessf("reading the audit trail for the answers the subject got after its sandbox disappeared: %v", err)
	}
	sym := vanish.Judge(answers)
	s.addEvidence(s.d2Evidence(r, answers, sym))
	if u := sym.Unintended; u != nil {
		return harnessf("after its sandbox %s disappeared the subject was answered %s: a symptom the drill did not intend (it means a 404 or a connection failure), so its reaction cannot be judged; first failed answers: %s",
			r.faultSandbox, u, sym)
	}
	s.note("what the subject saw after the disappearance (first failed answers for the sandbox): %s", sym)
	return nil
}

func noNewSandboxAfterExpiry(ctx context.Context) error {
	_, r, saw, err := lifecycleSeen(ctx)
	if err != nil {
		return err
	}
	if r.faultSandbox == "" {
		return failf("the sandbox never disappeared")
	}
	var after []string
	for _, ev := range saw.Events {
		if lc := ev.Lifecycle; ev.Kind == "lifecycle" && lc != nil && lc.Method == "POST" && isCreatePath(lc.Path) &&
			lc.Status == 202 && ev.Time.After(r.faultAt) {
			after = append(after, ev.SandboxID)
		}
	}
	if len(after) > 0 {
		return failf("the subject created %d sandbox(es) after its sandbox disappeared (%s): a vanished sandbox is not retryable",
			len(after), strings.Join(after, ", "))
	}
	return nil
}

func capacityFault(ctx context.Context, seconds int) error {
	s := state(ctx)
	// Keyed to the run's own key: other submissions graded on the server
	// meanwhile keep creating, so the drill need not run alone.
	d := &drill{Name: "capacity-429", retryAfter: time.Duration(seconds) * time.Second, keyed: true}
	if !s.env.mock() {
		// A real target has no pool the suite can exhaust (on Docker there
		// are none): the run's recording proxy answers its creates with the
		// pool's 429 (d3_proxy.go).
		s.env.capacityByProxy(d, seconds)
		s.drill = d
		return nil
	}
	adm := s.env.client.Admin()
	d.keyedFault("/_mock/faults/capacity",
		func(c context.Context, fp string) (*osb.Result[osb.Empty], error) {
			return adm.CapacityFaultForKey(c, fp, seconds)
		},
		adm.ClearCapacityFaultForKey)
	s.drill = d
	return nil
}

// createAttempts are the run's create requests, refused or not, in order.
func createAttempts(saw command.Saw) []wire.Event {
	var out []wire.Event
	for _, ev := range saw.Calls {
		if lc := ev.Lifecycle; lc != nil && lc.Method == "POST" && isCreatePath(lc.Path) {
			out = append(out, ev)
		}
	}
	return out
}

func boundedCreates(ctx context.Context, max int) error {
	s, r, saw, err := lifecycleSeen(ctx)
	if err != nil {
		return err
	}
	n := len(createAttempts(saw))
	s.note("%d create attempts", n)
	if note := capacityInjectedNote(s, r); note != "" {
		s.note("%s", note)
	}
	s.addEvidence(filepath.Join(r.RelDir, "lifecycle-calls.json"))
	if n == 0 {
		return failf("the subject never tried to create a sandbox")
	}
	if n > max {
		return failf("the subject tried to create %d times; capacity errors must end after a bounded back-off (at most %d)", n, max)
	}
	return nil
}

func respectedRetryAfter(ctx context.Context) error {
	s, _, saw, err := lifecycleSeen(ctx)
	if err != nil {
		return err
	}
	if s.drill == nil || s.drill.retryAfter == 0 {
		return failf("no Retry-After was in force")
	}
	at := createAttempts(saw)
	if len(at) < 2 {
		s.note("the subject gave up after the first 429 without retrying")
		return nil
	}
	for i := 1; i < len(at); i++ {
		gap := at[i].Time.Sub(at[i-1].Time)
		if gap < s.drill.retryAfter*9/10 { // 10 % for clock granularity between the two records
			return failf("create attempt %d came %s after the previous 429, before its Retry-After of %s", i+1, gap.Round(time.Millisecond), s.drill.retryAfter)
		}
	}
	s.note("%d attempts, each at least %s apart", len(at), s.drill.retryAfter)
	return nil
}

func runAndKill(ctx context.Context, fixture string) error {
	s := state(ctx)
	// It kills the run's own process group only: the drill need not run alone.
	d := &drill{Name: "sigkill-mid-run", Available: func(*Env) (bool, string) { return true, "" }, keyed: true}
	d.Opts.hardKill = true // SIGKILL at once, no SIGTERM first: no chance to run a finally
	kill := func(r *subjectRun, stop func()) func(string) {
		return func(id string) {
			r.faultAt = time.Now()
			r.faultSandbox = id
			stop()
		}
	}
	d.Opts.hook = func(ctx context.Context, r *subjectRun, stop func()) {
		// Mid-run: after the subject's first successful execd or file call
		// on its sandbox, as observed (progress.go).
		s.env.whenProgressed(ctx, r, kill(r, stop))
	}
	s.drill = d
	s.run = s.env.runDrill(ctx, s, fixture)
	s.addEvidence(s.run.evidence()...)
	if s.run.Err != nil {
		// The grader could not start the run (out of descriptors, a fork
		// that failed, a stub that did not answer): never the submission's.
		return harnessf("the harness could not start the run: %v", s.run.Err)
	}
	if s.run.faultSandbox == "" {
		saw, _ := s.run.Saw(ctx)
		if why := s.env.progressUnobserved(s.run); why != "" {
			return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s", why)
		}
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the subject ended (after %s, exit %d, %d sandbox(es) created, none with a finished execd or file call) before it could be killed mid-run",
			s.run.Res.Duration.Round(time.Millisecond), s.run.Res.ExitCode, len(saw.Created))
	}
	return nil
}

func residualHasTTL(ctx context.Context, maxSeconds int) error {
	s := state(ctx)
	saw, err := s.run.Saw(ctx)
	if err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	notes, err := residual.TTLs(ctx, s.env.client, saw.Created, time.Duration(maxSeconds)*time.Second)
	for _, n := range notes {
		s.note("%s", n)
	}
	return err
}

// reapRemoves runs the submission's reap command with the killed run's
// CAPSTONE_RUN_ID and checks, from what the server saw of the reap
// command's own key, that it deleted every residual sandbox before its
// expiry (harness/residual).
func reapRemoves(ctx context.Context) error {
	s := state(ctx)
	r := s.run
	saw, err := r.Saw(ctx)
	if err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	left, expiry, err := residual.Find(ctx, s.env.client, saw.Created)
	if err != nil {
		return err
	}
	if len(left) == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the killed run left no residual sandbox (it created %d, none alive after the SIGKILL), so there was nothing for an inspection to find", len(saw.Created))
	}
	cmd := s.env.sub().Manifest.Reap
	if cmd == "" {
		return failf("%s, so residual sandbox(es) %s of the killed run were left to their TTL", s.env.sub().Missing("reap"), strings.Join(left, ", "))
	}
	s.inv = s.env.invoke(ctx, "reap", cmd, "subject-reap", r.RunID, 5*time.Minute)
	s.addEvidence(s.inv.evidence()...)
	if err := s.inv.Judge(ctx); err != nil {
		return err
	}
	saw, err = s.inv.Saw(ctx)
	if err != nil {
		return harnessf("reading what the server saw: %v", err)
	}
	s.addEvidence(filepath.Join(s.inv.RelDir, "server-saw.json"))
	note, err := residual.Reaped(saw, left, expiry, s.inv.Res.ExitCode, r.RunID)
	return verdict(ctx, note, err)
}

// vanishAllowance is how many calls to a vanished sandbox D2 tolerates
// after it disappeared: the call that failed, one status check (GET → 404)
// and one more; DELETEs that clean up handles are not counted.
const vanishAllowance = 3

// boundedCallsAfterVanish counts the subject's calls to the vanished sandbox
// after it disappeared: calls to its dead execd endpoint and lifecycle calls
// with the run's key (bundled server: audit; real server: lifecycle calls
// through the recording proxy), and the failed steps of its own summary.
func boundedCallsAfterVanish(ctx context.Context, max int) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if r.faultSandbox == "" {
		return failf("the sandbox never disappeared")
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"), filepath.Join(r.RelDir, "lifecycle-calls.json"))
	c := vanish.CallsAfter(saw, observedCalls(r), s.env.mock(), r.faultSandbox, r.faultAt)
	execd, lifecycle, seen := c.Execd, c.Lifecycle, c.Seen
	failedSteps := 0
	if r.sum != nil {
		failedSteps = vanish.FailedSteps(r.sum.Steps)
	}
	calls := execd + lifecycle
	where := "audit"
	if !s.env.mock() {
		where = "recording proxy: lifecycle calls, and execd calls where it routes the sandbox endpoints"
	}
	s.note("after the disappearance: %d call(s) to its execd endpoint, %d lifecycle call(s) with the run's key (%s), %d failed step(s) in the summary; allowance %d",
		execd, lifecycle, where, failedSteps, max)
	if calls > max {
		return failf("the subject called the vanished sandbox %d times after it disappeared (%s): a vanished sandbox is not retryable (allowance %d)",
			calls, clip(strings.Join(seen, ", "), 300), max)
	}
	if failedSteps > max {
		return failf("the subject's summary records %d failed steps after its sandbox vanished: it kept trying (allowance %d)", failedSteps, max)
	}
	return nil
}
