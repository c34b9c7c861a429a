package steps

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/summary"
	"github.com/osb-capstone/acceptance/mock-server/wire"
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

// packageHosts are the hosts a package install legitimately needs.
var packageHosts = []string{"pypi.org", "files.pythonhosted.org", "*.pythonhosted.org", "*.pypi.org"}

func isPackageHost(h string) bool {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	for _, p := range packageHosts {
		if h == p || (strings.HasPrefix(p, "*.") && strings.HasSuffix(h, p[1:])) {
			return true
		}
	}
	return false
}

func denyPackageIndex(ctx context.Context, a, b string) error {
	s := state(ctx)
	// Keyed to the run's own key: the sandboxes other submissions create
	// meanwhile still reach the index, so the drill need not run alone.
	d := &drill{Name: "egress-deny-package-index", keyed: true}
	if !s.env.mock() {
		// A real target: through the subject's sandbox's own egress sidecar
		// (its runtime policy API), as soon as the sandbox exists (d1_policy.go).
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
			seen = "; after the disappearance the subject saw: " + s.env.d2RunSymptom(r).String()
		}
		return failf("summary.json classifies the error as %q (%s), the drill expects %q%s", r.sum.Error.Class, quoted(clip(r.sum.Error.Message, 200)), class, seen)
	}
	return nil
}

// What a failed network access looks like from inside a sandbox, as pip,
// python, urllib, requests and curl print it, in two kinds (classifyNetwork):
//
//   - networkDenial is evidence of a denial: NXDOMAIN (EAI_NONAME, "Name or
//     service not known", curl's "Could not resolve host"), a policy 403 from
//     a proxy or the sidecar, no route (ENETUNREACH, EHOSTUNREACH).
//   - networkUnreachable is a network failure that does not show a denial by
//     itself: a resolver that failed temporarily (SERVFAIL, EAI_AGAIN: an
//     allowed name without upstream fails so), a refused connection, a name
//     with no address (EAI_NODATA), a TLS connection cut before any answer (a
//     gateway without upstream), or a connection error that names no cause.
//
// Denial wins when both are present (a pip run may meet both).
var (
	networkDenial = regexp.MustCompile(`(?i)name or service not known|\[Errno -2\]|EAI_NONAME|could not resolve host|nxdomain|` +
		`nodename nor servname|getaddrinfo failed|network is unreachable|no route to host|` +
		`403 forbidden|egress denied|blocked by (the )?(network|egress) policy`)
	networkUnreachable = regexp.MustCompile(`(?i)temporary failure in name resolution|EAI_AGAIN|\[Errno -3\]|servfail|` +
		`connection refused|\[Errno 111\]|no address associated with hostname|\[Errno -5\]|` +
		`SSLZeroReturnError|EOF occurred in violation of protocol|unexpected eof while reading`)
	// networkFailure names no cause: unreachable unless the text shows one.
	networkFailure = regexp.MustCompile(`(?i)could not resolve|NewConnectionError|failed to establish a new connection|proxyerror`)
)

// netFailure is the kind of a failed network access (classifyNetwork).
type netFailure int

const (
	netNone        netFailure = iota // no network failure in the text
	netDenied                        // evidence of a denial
	netUnreachable                   // a network failure that is not, by itself, a denial
)

func (k netFailure) String() string {
	switch k {
	case netDenied:
		return "denied"
	case netUnreachable:
		return "unreachable"
	}
	return "none"
}

// classifyNetwork says whether text (a failed command's stderr and stdout)
// shows a network denial, an unreachable network, or neither, and the line
// that shows it (at most 200 bytes).
func classifyNetwork(text string) (netFailure, string) {
	if loc := networkDenial.FindStringIndex(text); loc != nil {
		return netDenied, lineAround(text, loc[0], 200)
	}
	for _, re := range []*regexp.Regexp{networkUnreachable, networkFailure} {
		if loc := re.FindStringIndex(text); loc != nil {
			return netUnreachable, lineAround(text, loc[0], 200)
		}
	}
	return netNone, ""
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
		switch kind, sign := classifyNetwork(st.Stderr + "\n" + st.Stdout); kind {
		case netDenied:
			s.note("step %q: %s", st.Name, clip(sign, 120))
			return nil
		case netUnreachable:
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
	_, _, err = audited(ctx)
	if err != nil {
		return err
	}
	denied := 0
	for _, ev := range r.audit {
		if ev.Kind == "egress" && ev.Egress != nil && isPackageHost(ev.Egress.Host) && ev.Egress.Decision == "deny" {
			denied++
		}
	}
	if denied == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"step %q failed with %q: the index was unreachable, which by itself is not a denial (SERVFAIL/EAI_AGAIN or refused), and no denial of a package index host is in the audit, so the subject did not meet the denial",
			unreachStep, clip(unreachSign, 120))
	}
	s.note("step %q: %s (the index unreachable; the audit shows %d denial(s) of package index hosts, so this is the denial)", unreachStep, clip(unreachSign, 120), denied)
	return nil
}

// pipInstall matches a command that installs packages with pip (pip, pip3, python -m pip).
var pipInstall = regexp.MustCompile(`\bpip[0-9.]*\s+(?:[^|;&]*\s)?install\b`)

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
	if err := s.env.loadAudit(ctx, r); err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"))
	attempts, asks := 0, 0
	for _, ev := range r.audit {
		if ev.Kind == "command" && ev.Command != nil && pipInstall.MatchString(ev.Command.Command) {
			attempts++
		}
		if ev.Kind == "egress" && ev.Egress != nil && isPackageHost(ev.Egress.Host) {
			asks++
		}
	}
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
	if err := s.env.loadAudit(ctx, r); err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"))
	installs, asks := 0, 0
	for _, ev := range r.audit {
		if ev.Kind == "command" && ev.Command != nil && pipInstall.MatchString(ev.Command.Command) {
			installs++
		}
		if ev.Kind == "egress" && ev.Egress != nil && isPackageHost(ev.Egress.Host) {
			asks++
		}
	}
	if installs == 0 && asks == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"no install step was attempted (no pip command ran and no package index host was asked in the subject's %d sandbox(es); it exited %d), so the denial was never met",
			len(r.sandboxes), r.Res.ExitCode)
	}
	denied := 0
	for _, ev := range r.audit {
		if ev.Kind == "egress" && ev.Egress != nil && isPackageHost(ev.Egress.Host) && ev.Egress.Decision == "deny" {
			denied++
		}
	}
	if r.sum != nil && denied == 0 {
		if step, sign, ok := indexUnreachable(r.sum.Steps); ok {
			return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
				"the target has no upstream: the subject's install (step %q) met a package index that could not be reached at all (%s), "+
					"not the drill's denial (none is on record), so whether it tells a denial from a script error was not measured", step, sign)
		}
	}
	return nil
}

// lineAround is the line of s holding offset i, at most n bytes from a little
// before i.
func lineAround(s string, i, n int) string {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		end = len(s)
	} else {
		end += i
	}
	start = max(start, i-60)
	line := strings.ToValidUTF8(s[start:min(end, start+n)], "")
	return strings.TrimSpace(line)
}

// indexUnreachable finds a failed step whose output shows the package index
// unreachable (classifyNetwork: no upstream, refused, cut) and no step that
// shows a denial: the step's name, the sign, and whether one was found.
func indexUnreachable(steps []summary.Step) (string, string, bool) {
	name, sign := "", ""
	for _, st := range steps {
		if st.ExitCode == nil || *st.ExitCode == 0 {
			continue
		}
		switch kind, line := classifyNetwork(st.Stderr + "\n" + st.Stdout); kind {
		case netDenied:
			return "", "", false
		case netUnreachable:
			if name == "" {
				name, sign = st.Name, line
			}
		}
	}
	return name, sign, name != ""
}

func indexDenialsAudited(ctx context.Context) error {
	// A security check: it needs the audit (or, on a real target, the
	// sidecar's own record), never the subject's own summary.
	if s, r, err := ran(ctx); err == nil && !s.env.mock() {
		return indexDeniedReal(ctx, s, r)
	}
	s, r, err := securityAudited(ctx, "the bundled server's audit")
	if err != nil {
		return err
	}
	denied := 0
	for _, ev := range r.audit {
		if ev.Kind == "egress" && ev.Egress != nil && isPackageHost(ev.Egress.Host) {
			if ev.Egress.Decision == "allow" {
				return violationf("the sandbox reached %s (%s allowed) while the platform denied the package index", ev.Egress.Host, ev.Egress.Phase)
			}
			denied++
		}
	}
	if denied == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "no package index host was asked from the subject's sandbox (its install, if any, never reached the network), so no denial was met")
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
		_ = s.env.loadAudit(ctx, r)
		if why := s.env.progressUnobserved(r); why != "" {
			return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s", why)
		}
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the subject ended (after %s, exit %d, %d sandbox(es) created) before its sandbox could be made to disappear mid-run (after its first execd or file call)",
			r.Res.Duration.Round(time.Millisecond), r.Res.ExitCode, len(r.sandboxes))
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
	if s.env.mock() { // a real target's answers are the recording proxy's (observedCalls)
		if err := s.env.loadAudit(ctx, r); err != nil {
			return harnessf("reading the audit trail for the answers the subject got after its sandbox disappeared: %v", err)
		}
	}
	answers := s.env.d2RunAnswers(r)
	sym := judgeD2Symptom(answers)
	s.addEvidence(s.d2Evidence(r, answers, sym))
	if u := sym.unintended; u != nil {
		return harnessf("after its sandbox %s disappeared the subject was answered %s: a symptom the drill did not intend (it means a 404 or a connection failure), so its reaction cannot be judged; first failed answers: %s",
			r.faultSandbox, u, sym)
	}
	s.note("what the subject saw after the disappearance (first failed answers for the sandbox): %s", sym)
	return nil
}

func noNewSandboxAfterExpiry(ctx context.Context) error {
	_, r, err := lifecycleSeen(ctx)
	if err != nil {
		return err
	}
	if r.faultSandbox == "" {
		return failf("the sandbox never disappeared")
	}
	var after []string
	for _, ev := range r.audit {
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
	if !s.env.mock() {
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
			"OpenSandbox 1.1.1 answers 429 with Retry-After only from a Kubernetes pool at capacity (KUBERNETES::POOL_CAPACITY_EXHAUSTED); "+
				"target %s has no pool the suite can exhaust on demand (on Docker there are no pools), so the drill is not actually measured, as the course says without a cluster", s.env.opt.Target.Kind)
	}
	// Keyed to the run's own key: other submissions graded on the server
	// meanwhile keep creating, so the drill need not run alone.
	d := &drill{Name: "capacity-429", Available: mockOnly, retryAfter: time.Duration(seconds) * time.Second, keyed: true}
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
func createAttempts(r *subjectRun) []wire.Event {
	var out []wire.Event
	for _, ev := range r.attempts {
		if lc := ev.Lifecycle; lc != nil && lc.Method == "POST" && isCreatePath(lc.Path) {
			out = append(out, ev)
		}
	}
	return out
}

func boundedCreates(ctx context.Context, max int) error {
	s, r, err := lifecycleSeen(ctx)
	if err != nil {
		return err
	}
	n := len(createAttempts(r))
	s.note("%d create attempts", n)
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
	s, r, err := lifecycleSeen(ctx)
	if err != nil {
		return err
	}
	if s.drill == nil || s.drill.retryAfter == 0 {
		return failf("no Retry-After was in force")
	}
	at := createAttempts(r)
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
		_ = s.env.loadAudit(ctx, s.run)
		if why := s.env.progressUnobserved(s.run); why != "" {
			return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s", why)
		}
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the subject ended (after %s, exit %d, %d sandbox(es) created, none with a finished execd or file call) before it could be killed mid-run",
			s.run.Res.Duration.Round(time.Millisecond), s.run.Res.ExitCode, len(s.run.sandboxes))
	}
	return nil
}

func residualHasTTL(ctx context.Context, maxSeconds int) error {
	s := state(ctx)
	r := s.run
	if err := s.env.loadAudit(ctx, r); err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	for _, id := range r.sandboxes {
		c, cancel := ctxTimeout(ctx, 10*time.Second)
		res, err := s.env.client.GetSandbox(c, id)
		cancel()
		if err != nil {
			return harnessf("GET %s: %v", id, err)
		}
		if res.Status == 404 {
			continue
		}
		if !res.Decoded {
			return failf("GET %s answered %d", id, res.Status)
		}
		sb := res.Value
		if sb.ExpiresAt == nil {
			return failf("residual sandbox %s has no expiry: a killed orchestrator leaves it running forever", id)
		}
		created, err1 := time.Parse(time.RFC3339Nano, sb.CreatedAt)
		expires, err2 := time.Parse(time.RFC3339Nano, *sb.ExpiresAt)
		if err1 != nil || err2 != nil {
			return failf("residual sandbox %s has unparseable times %q / %q", id, sb.CreatedAt, *sb.ExpiresAt)
		}
		if ttl := expires.Sub(created); ttl > time.Duration(maxSeconds)*time.Second {
			return failf("residual sandbox %s expires %s after creation, more than %ds", id, ttl.Round(time.Second), maxSeconds)
		}
		s.note("residual %s expires %s after creation", id, expires.Sub(created).Round(time.Second))
	}
	return nil
}

// reapRemoves runs the submission's reap command with the killed run's
// CAPSTONE_RUN_ID and checks, from what the server saw of the reap
// command's own key, that it deleted every residual sandbox before its expiry.
func reapRemoves(ctx context.Context) error {
	s := state(ctx)
	r := s.run
	if err := s.env.loadAudit(ctx, r); err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	// What the killed run left: its sandboxes that still exist.
	expiry := map[string]time.Time{}
	var residual []string
	for _, id := range r.sandboxes {
		c, cancel := ctxTimeout(ctx, 10*time.Second)
		res, err := s.env.client.GetSandbox(c, id)
		cancel()
		if err != nil {
			return harnessf("GET %s: %v", id, err)
		}
		if res.Status == 404 {
			continue
		}
		residual = append(residual, id)
		if res.Decoded && res.Value.ExpiresAt != nil {
			if t, err := time.Parse(time.RFC3339Nano, *res.Value.ExpiresAt); err == nil {
				expiry[id] = t
			}
		}
	}
	if len(residual) == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the killed run left no residual sandbox (it created %d, none alive after the SIGKILL), so there was nothing for an inspection to find", len(r.sandboxes))
	}
	cmd := s.env.sub().Manifest.Reap
	if cmd == "" {
		return failf("%s, so residual sandbox(es) %s of the killed run were left to their TTL", s.env.sub().Missing("reap"), strings.Join(residual, ", "))
	}
	s.inv = s.env.invoke(ctx, "reap", cmd, "subject-reap", r.RunID, 5*time.Minute)
	s.addEvidence(s.inv.evidence()...)
	if err := s.inv.Judge(ctx); err != nil {
		return err
	}
	if err := s.env.loadInvocationAudit(ctx, s.inv); err != nil {
		return harnessf("reading what the server saw: %v", err)
	}
	s.addEvidence(filepath.Join(s.inv.RelDir, "server-saw.json"))
	var removed, missed, late []string
	for _, id := range residual {
		var at time.Time
		for _, ev := range s.inv.calls {
			if lc := ev.Lifecycle; lc != nil && lc.Method == "DELETE" && lc.Status == 204 && ev.SandboxID == id {
				at = ev.Time
				break
			}
		}
		switch {
		case at.IsZero():
			missed = append(missed, id)
		case !expiry[id].IsZero() && at.After(expiry[id]):
			late = append(late, id)
		default:
			removed = append(removed, id)
		}
	}
	if len(missed) > 0 {
		return failf("the reap command (exit %d) did not delete residual sandbox(es) %s of run %s: the server saw no DELETE → 204 for them from its key",
			s.inv.Res.ExitCode, strings.Join(missed, ", "), r.RunID)
	}
	if len(late) > 0 {
		return failf("the reap command deleted %s only after its expiry", strings.Join(late, ", "))
	}
	s.note("the reap command deleted %d residual sandbox(es) of the killed run (%s), DELETE → 204 with its own key, before expiry",
		len(removed), strings.Join(removed, ", "))
	return nil
}

// vanishAllowance is how many calls to a vanished sandbox D2 tolerates
// after it disappeared: the call that failed, one status check (GET → 404)
// and one more; DELETEs that clean up handles are not counted.
const vanishAllowance = 3

// execdAfterRemovalKind is the audit kind the bundled server records for a
// call to the execd endpoint of a sandbox that is gone (its port keeps
// listening and records method and path).
const execdAfterRemovalKind = "execd_after_removal"

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
	if err := s.env.loadAudit(ctx, r); err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"), filepath.Join(r.RelDir, "lifecycle-calls.json"))
	execd, lifecycle := 0, 0
	var seen []string
	for _, ev := range r.audit {
		if ev.SandboxID != r.faultSandbox || ev.Time.Before(r.faultAt) {
			continue
		}
		if ev.Kind == execdAfterRemovalKind {
			if inFlightAtRemoval(ev) {
				continue // made before the disappearance; the removal cut it
			}
			execd++
			seen = append(seen, "execd after removal")
		}
	}
	if !s.env.mock() {
		// The same observations that timed the fault: execd calls the
		// recording proxy saw (where it routes the sandbox endpoints).
		n, what := execdCallsAfter(observedCalls(r), r.faultSandbox, r.faultAt)
		execd += n
		seen = append(seen, what...)
	}
	for _, ev := range r.attempts {
		if lc := ev.Lifecycle; lc != nil && ev.SandboxID == r.faultSandbox && !ev.Time.Before(r.faultAt) && lc.Method != "DELETE" {
			if _, isExecd := execdPath(lc.Path); isExecd && !s.env.mock() {
				continue // counted above
			}
			lifecycle++
			seen = append(seen, fmt.Sprintf("%s %s → %d", lc.Method, lc.Path, lc.Status))
		}
	}
	failedSteps := 0
	if r.sum != nil {
		for _, st := range r.sum.Steps {
			if st.ExitCode == nil || *st.ExitCode != 0 {
				failedSteps++
			}
		}
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
