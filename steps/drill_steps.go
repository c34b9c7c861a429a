package steps

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Fault drills D1, D2, D3 and D5.

func registerDrillSteps(sc *godog.ScenarioContext) {
	sc.Step(`^the platform denies "([^"]*)" and "([^"]*)" as a simulated fault$`, denyPackageIndex)
	sc.Step(`^the subject's summary classifies the error as "([^"]*)"$`, errorClassIs)
	sc.Step(`^a failed install step shows stderr that identifies a network denial$`, installStderrShowsDenial)
	sc.Step(`^the install was attempted at most (\d+) times and the package index was asked at most (\d+) times$`, boundedRetries)
	sc.Step(`^the denials of the package index are recorded in the audit$`, indexDenialsAudited)
	sc.Step(`^the platform will expire the subject's sandbox once its first command has finished$`, expireAfterFirstCommand)
	sc.Step(`^the subject created no further sandbox after the expiry$`, noNewSandboxAfterExpiry)
	sc.Step(`^the target can exhaust sandbox capacity on demand$`, capacityExhaustible)
	sc.Step(`^the subject is run on fixture "([^"]*)" and killed with SIGKILL once its first command has finished$`, runAndKill)
	sc.Step(`^the subject's sandbox, if still alive, has an expiry of at most (\d+) seconds after its creation$`, residualHasTTL)
	sc.Step(`^an inspection lists the residual sandbox of this run and removes it$`, inspectAndRemove)
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
	d := &drill{Name: "egress-deny-package-index", Available: mockOnly}
	if ok, why := d.Available(s.env); !ok {
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s", why)
	}
	d.Setup = func(ctx context.Context, e *Env) error {
		c, cancel := ctxTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := e.client.Admin().EgressDeny(c, []string{a, b})
		if err != nil {
			return err
		}
		if !res.OK() {
			return fmt.Errorf("/_mock/faults/egress-deny answered %d: %s", res.Status, excerpt(res.Body, 200))
		}
		return nil
	}
	d.Teardown = func(ctx context.Context, e *Env) {
		c, cancel := ctxTimeout(ctx, 10*time.Second)
		defer cancel()
		_, _ = e.client.Admin().ClearEgressDeny(c)
	}
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
		return failf("summary.json classifies the error as %q (%s), the drill expects %q", r.sum.Error.Class, clip(r.sum.Error.Message, 200), class)
	}
	return nil
}

// networkDenial matches what a denied name or connection looks like from
// inside a sandbox (NXDOMAIN, unreachable, refused by the proxy).
var networkDenial = regexp.MustCompile(`(?i)could not resolve|name or service not known|temporary failure in name resolution|` +
	`nodename nor servname|getaddrinfo failed|NewConnectionError|failed to establish a new connection|network is unreachable|` +
	`403 forbidden|proxyerror|egress denied|connection refused`)

func installStderrShowsDenial(ctx context.Context) error {
	s, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	for _, st := range r.sum.Steps {
		if st.ExitCode != nil && *st.ExitCode != 0 && networkDenial.MatchString(st.Stderr+"\n"+st.Stdout) {
			s.note("step %q: %s", st.Name, clip(networkDenial.FindString(st.Stderr+"\n"+st.Stdout), 80))
			return nil
		}
	}
	return failf("no failed step's stderr identifies a network denial (looked for NXDOMAIN-style and connection errors)")
}

// pipInstall matches a command that installs packages with pip (pip, pip3, python -m pip).
var pipInstall = regexp.MustCompile(`\bpip[0-9.]*\s+(?:[^|;&]*\s)?install\b`)

func boundedRetries(ctx context.Context, maxAttempts, maxAsks int) error {
	s, r, err := audited(ctx)
	if err != nil {
		return err
	}
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
		return failf("the subject ran %d install commands; a denied index must not be retried more than %d times", attempts, maxAttempts)
	}
	if asks > maxAsks {
		return failf("the package index was asked %d times; more than %d is retrying without bound", asks, maxAsks)
	}
	return nil
}

func indexDenialsAudited(ctx context.Context) error {
	s, r, err := audited(ctx)
	if err != nil {
		return err
	}
	denied := 0
	for _, ev := range r.audit {
		if ev.Kind == "egress" && ev.Egress != nil && isPackageHost(ev.Egress.Host) {
			if ev.Egress.Decision == "allow" {
				return failf("the audit shows %s allowed (%s) while the fault was on", ev.Egress.Host, ev.Egress.Phase)
			}
			denied++
		}
	}
	if denied == 0 {
		return failf("no denial of a package index host is in the audit: the subject never reached for the index")
	}
	s.note("%d denials of package index hosts audited", denied)
	return nil
}

func expireAfterFirstCommand(ctx context.Context) error {
	s := state(ctx)
	d := &drill{Name: "expire-mid-run", Available: mockOnly}
	if ok, why := d.Available(s.env); !ok {
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s", why)
	}
	d.Opts.hook = func(ctx context.Context, r *subjectRun, stop func()) {
		s.env.whenFirstCommandFinished(ctx, r, func(id string) {
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

func noNewSandboxAfterExpiry(ctx context.Context) error {
	s, r, err := audited(ctx)
	if err != nil {
		return err
	}
	if r.faultSandbox == "" {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the subject never finished a command, so the sandbox was never expired")
	}
	var after []string
	for _, ev := range r.audit {
		if lc := ev.Lifecycle; ev.Kind == "lifecycle" && lc != nil && lc.Method == "POST" && isCreatePath(lc.Path) &&
			lc.Status == 202 && ev.Time.After(r.faultAt) {
			after = append(after, ev.SandboxID)
		}
	}
	s.note("expired %s", r.faultSandbox)
	if len(after) > 0 {
		return failf("the subject created %d sandbox(es) after its sandbox disappeared (%s): a vanished sandbox is not retryable",
			len(after), strings.Join(after, ", "))
	}
	return nil
}

func capacityExhaustible(ctx context.Context) error {
	return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
		"OpenSandbox 1.1.1 never answers 429 (an exhausted Kubernetes pool gives 504 POD_READY_TIMEOUT, CONTRACT §9) and "+
			"this target has no pool to shrink; the course says to mark the drill not actually measured without a cluster")
}

func runAndKill(ctx context.Context, fixture string) error {
	s := state(ctx)
	d := &drill{Name: "sigkill-mid-run", Available: mockOnly}
	if ok, why := d.Available(s.env); !ok {
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s", why)
	}
	d.Opts.grace = time.Nanosecond // SIGKILL at once: no chance to run a finally
	d.Opts.hook = func(ctx context.Context, r *subjectRun, stop func()) {
		s.env.whenFirstCommandFinished(ctx, r, func(id string) {
			r.faultAt = time.Now()
			r.faultSandbox = id
			stop()
		})
	}
	s.drill = d
	s.run = s.env.runDrill(ctx, s, fixture)
	s.addEvidence(s.run.evidence()...)
	if s.run.err != nil {
		return failf("%v", s.run.err)
	}
	if s.run.faultSandbox == "" {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the subject finished no command before it ended, so it was never killed mid-run")
	}
	return nil
}

func residualHasTTL(ctx context.Context, maxSeconds int) error {
	s := state(ctx)
	r := s.run
	if err := s.env.loadAudit(ctx, r); err != nil {
		return failf("audit: %v", err)
	}
	for _, id := range r.sandboxes {
		c, cancel := ctxTimeout(ctx, 10*time.Second)
		res, err := s.env.client.GetSandbox(c, id)
		cancel()
		if err != nil {
			return failf("GET %s: %v", id, err)
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

func inspectAndRemove(ctx context.Context) error {
	s := state(ctx)
	r := s.run
	removed := 0
	for _, id := range r.sandboxes {
		c, cancel := ctxTimeout(ctx, 30*time.Second)
		res, err := s.env.client.GetSandbox(c, id)
		if err == nil && res.Status == 200 {
			// The inspection stands in for the TTL: remove what the killed process left.
			if del, err := s.env.client.DeleteSandbox(c, id); err == nil && del.Status == 204 {
				removed++
			}
		}
		cancel()
	}
	s.note("inspection removed %d residual sandbox(es)", removed)
	return nil
}
