package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// D1 on a real target. There is no admin API there, but the egress sidecar
// of a sandbox created with a networkPolicy has a runtime policy API
// (CONTRACT §3.3: /policy on port 18080, OPENSANDBOX-EGRESS-AUTH): PATCH
// /policy prepends its rules and replaces any rule with the same target, so
// a deny of the package index hosts wins over the subject's allow. The drill
// sends that PATCH as soon as the recording proxy has seen the subject's
// create answered (the earliest moment its sandbox exists), through the
// endpoint the server returns for port 18080 with the header it gives, then
// reads GET /policy back. Where the sidecar has no such API (or the sandbox
// has no sidecar), the drill is not measured, saying why.

// policyDeny is what the drill did to the subject's sandbox on a real target.
type policyDeny struct {
	sandboxID string
	requested time.Time // when the PATCH was sent
	applied   time.Time // when it answered 200: the deny in effect from then on
	patch     string    // the PATCH's status and body, for the evidence
	policy    string    // GET /policy afterwards
	why       string    // why it could not be applied ("" when applied)
	absent    bool      // the sidecar has no runtime policy API (or the sandbox has no sidecar)
	log       *sidecarLog
}

func (p *policyDeny) sidecarLog(wait time.Duration) (string, error, bool) {
	return p.log.read(wait)
}

// sidecarLog is a sandbox's egress sidecar log as the target's SidecarLog
// follows it (nil: the target gives no access to it).
type sidecarLog struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{} // closed when the follower ended (the sidecar stopped)
	err  error
}

// followSidecar starts following sandbox id's sidecar log (nil when the
// target cannot).
func (e *Env) followSidecar(ctx context.Context, id string) *sidecarLog {
	follow := e.opt.Target.SidecarLog
	if follow == nil {
		return nil
	}
	l := &sidecarLog{done: make(chan struct{})}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Minute)
	go func() {
		defer close(l.done)
		defer cancel()
		err := follow(lctx, id, l)
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
	}()
	return l
}

func (l *sidecarLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

// read returns the log so far, waiting up to wait for the sidecar to stop
// (ok false: no log is followed).
func (l *sidecarLog) read(wait time.Duration) (string, error, bool) {
	if l == nil {
		return "", nil, false
	}
	select {
	case <-l.done:
	case <-time.After(wait):
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String(), l.err, true
}

// denyByPolicyAPI arms the drill on a real target: once the run's create is
// answered, deny hosts in that sandbox's egress policy.
func (e *Env) denyByPolicyAPI(d *drill, hosts []string) {
	d.keyed, d.sharedRun = true, true
	d.Opts.hook = func(ctx context.Context, r *subjectRun, _ func()) {
		e.whenCreated(ctx, r, func(id string) {
			r.policyDeny = e.applyPolicyDeny(context.WithoutCancel(ctx), id, hosts)
		})
	}
}

// whenCreated polls the run's recording proxy until a create by the run
// was answered, then calls act with that sandbox (once). It reads what is
// recorded without waiting for calls in flight: the subject's readiness
// pings are always in flight, and waiting for them delayed the deny by up
// to 15 s in a full run.
func (e *Env) whenCreated(ctx context.Context, r *subjectRun, act func(sandboxID string)) {
	for {
		if r.Proxy != nil {
			for _, c := range r.Proxy.Recorded() {
				if pc := observedCall(c); pc.Created && pc.SandboxID != "" {
					act(pc.SandboxID)
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// applyPolicyDeny resolves the sandbox's egress endpoint and PATCHes the
// deny rules; it starts following the sidecar's log where the target
// allows it.
func (e *Env) applyPolicyDeny(ctx context.Context, id string, hosts []string) *policyDeny {
	p := &policyDeny{sandboxID: id, log: e.followSidecar(ctx, id)}
	c, cancel := ctxTimeout(ctx, 90*time.Second)
	defer cancel()
	ep, err := e.client.GetEndpoint(c, id, osb.DefaultEgressPort, false)
	if err != nil || !ep.OK() {
		p.why = fmt.Sprintf("the egress endpoint (port %d) of sandbox %s could not be resolved: %s", osb.DefaultEgressPort, id, resultErr(ep, err))
		return p
	}
	eg, err := e.client.Egress(ep.Value)
	if err != nil {
		p.why = fmt.Sprintf("the egress endpoint %q of sandbox %s is not usable: %v", ep.Value.Endpoint, id, err)
		return p
	}
	rules := make([]osb.NetworkRule, 0, len(hosts))
	for _, h := range hosts {
		rules = append(rules, osb.NetworkRule{Action: "deny", Target: h})
	}
	// The create is answered once the containers run; execd (whose
	// /proxy/18080 carries the call) may still be starting: a transport
	// error is retried for up to a minute (the SDKs and the reference poll
	// /ping for up to 30 s first; a loaded docker target took over 15 s).
	var res *osb.Result[osb.PolicyStatus]
	first := time.Now()
	for deadline := first.Add(60 * time.Second); ; {
		p.requested = time.Now()
		res, err = eg.PatchPolicy(c, rules)
		if err == nil || time.Now().After(deadline) || c.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		// execd itself never answered: the harness could not inject its
		// fault (a sandbox without a sidecar answers 502, below).
		p.why = fmt.Sprintf("PATCH /policy through sandbox %s's egress endpoint got no answer for %s (execd's /proxy/%d carries it): %v", id, time.Since(first).Round(time.Second), osb.DefaultEgressPort, err)
		return p
	}
	p.patch = fmt.Sprintf("PATCH /policy %s → %d %s", mustJSON(rules), res.Status, excerpt(res.Body, 500))
	switch {
	case res.Status == http.StatusNotFound || res.Status == http.StatusMethodNotAllowed || res.Status == http.StatusNotImplemented:
		p.absent = true
		p.why = fmt.Sprintf("the egress sidecar of sandbox %s has no runtime policy API: PATCH /policy answered %d (%s)", id, res.Status, excerpt(res.Body, 200))
		return p
	case res.Status == http.StatusBadGateway || res.Status == http.StatusServiceUnavailable:
		p.absent = true
		p.why = fmt.Sprintf("nothing answered on port %d of sandbox %s (PATCH /policy: %d %s): a sandbox created without networkPolicy has no egress sidecar", osb.DefaultEgressPort, id, res.Status, excerpt(res.Body, 200))
		return p
	case !res.OK():
		p.why = fmt.Sprintf("the egress sidecar of sandbox %s refused the deny: PATCH /policy answered %d (%s)", id, res.Status, excerpt(res.Body, 200))
		return p
	}
	p.applied = time.Now()
	if got, err := eg.GetPolicy(c); err == nil {
		p.policy = fmt.Sprintf("GET /policy → %d %s", got.Status, excerpt(got.Body, 2000))
	}
	return p
}

func resultErr[T any](r *osb.Result[T], err error) string {
	if err != nil {
		return err.Error()
	}
	if r == nil {
		return "no answer"
	}
	return fmt.Sprintf("%d %s", r.Status, excerpt(r.Body, 200))
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// realDeny is the precondition of D1's checks on a real target: the deny was
// applied to the subject's sandbox before its first install command. It
// keeps the drill's evidence, and returns the deny and the run's install
// commands (through the recording proxy, in order).
func realDeny(ctx context.Context, s *scenario, r *subjectRun) (*policyDeny, []string, error) {
	p := r.policyDeny
	if p == nil {
		return nil, nil, notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"no create of the subject was seen (it exited %d after %s), so there was no sandbox whose egress policy could deny the package index",
			r.Res.ExitCode, r.Res.Duration.Round(time.Millisecond))
	}
	var ev strings.Builder
	fmt.Fprintf(&ev, "D1 on a real target: deny of the package index through the egress sidecar's runtime policy API\nsandbox: %s\n", p.sandboxID)
	if !p.requested.IsZero() {
		fmt.Fprintf(&ev, "requested: %s (%s into the run)\n", p.requested.UTC().Format(time.RFC3339Nano), p.requested.Sub(r.Started).Round(time.Millisecond))
	}
	if !p.applied.IsZero() {
		fmt.Fprintf(&ev, "applied: %s (%s into the run)\n", p.applied.UTC().Format(time.RFC3339Nano), p.applied.Sub(r.Started).Round(time.Millisecond))
	}
	fmt.Fprintf(&ev, "%s\n%s\n", p.patch, p.policy)
	if p.why != "" {
		fmt.Fprintf(&ev, "not applied: %s\n", p.why)
	}
	s.addEvidence(s.env.writeEvidence("drill", "d1-policy-"+s.slug()+".txt", []byte(ev.String())))
	if p.why != "" {
		if !p.absent {
			return p, nil, harnessf("%s", p.why)
		}
		return p, nil, notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s, so the package index could not be denied mid-run", p.why)
	}
	var installs []string
	var first time.Time
	for _, c := range observedCalls(r) {
		if c.SandboxID == "" || c.Command == "" || !pipInstall.MatchString(c.Command) {
			continue
		}
		if first.IsZero() || c.Time.Before(first) {
			first = c.Time
		}
		installs = append(installs, c.Command)
	}
	if !first.IsZero() && first.Before(p.applied) {
		return p, installs, notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the subject's first install command started %s into the run, before the deny took effect (%s into the run), so its install may not have met the denial",
			first.Sub(r.Started).Round(time.Millisecond), p.applied.Sub(r.Started).Round(time.Millisecond))
	}
	return p, installs, nil
}

// reachedForIndexReal is reachedForIndex on a real target: the deny was in
// place, an install command ran after it (seen by the recording proxy), and
// the install did need the index (a failed install step, or pip output that
// shows it asked). An install satisfied from the image never meets the
// denial: not measured.
func reachedForIndexReal(ctx context.Context, s *scenario, r *subjectRun) error {
	_, installs, err := realDeny(ctx, s, r)
	if err != nil {
		return err
	}
	if len(installs) == 0 {
		if !ranThroughProxy(r) {
			return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
				"the recording proxy saw none of the subject's execd calls (it does not reach execd through the endpoints the server returned), so whether it ran an install cannot be seen on target %s", s.env.opt.Target.Kind)
		}
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"no install command (pip install) was sent to the subject's sandbox (it exited %d), so the denial was never met", r.Res.ExitCode)
	}
	if r.sum != nil && !installFailed(r) {
		// The subject did reach for its packages; the target's sandbox image
		// had them (the docker target's carries tabulate), so pip never asked
		// the index: a property of the target, not of the subject.
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
			"the subject's install (%d command(s)) succeeded without the package index: the target's sandbox image already had what it asked for (the docker target's image carries tabulate), so the denial was never met (the bundled server's sandboxes lack the package, so there it is)", len(installs))
	}
	s.note("the package index was denied in sandbox %s through its egress policy API %s into the run; %d install command(s) after it",
		r.policyDeny.sandboxID, r.policyDeny.applied.Sub(r.Started).Round(time.Millisecond), len(installs))
	return nil
}

// ranThroughProxy: the recording proxy saw at least one execd call of the run.
func ranThroughProxy(r *subjectRun) bool {
	for _, c := range observedCalls(r) {
		if _, ok := execdPath(c.Path); ok && c.SandboxID != "" {
			return true
		}
	}
	return false
}

// installFailed: a step of the summary ran pip install and failed.
func installFailed(r *subjectRun) bool {
	for _, st := range r.sum.Steps {
		if st.ExitCode != nil && *st.ExitCode != 0 && (pipInstall.MatchString(st.Command) || strings.Contains(strings.ToLower(st.Name), "install")) {
			return true
		}
	}
	return false
}

// indexDeniedReal is the network check of D1 on a real target. The real
// sidecar logs no denials (CONTRACT §3.4), but it logs every lookup it
// allows (opensandbox.event egress.outbound with target.host): a package
// index host allowed after the deny took effect would show there. The check
// needs that log (the docker target follows it); elsewhere it is not
// measured.
func indexDeniedReal(ctx context.Context, s *scenario, r *subjectRun) error {
	p, installs, err := realDeny(ctx, s, r)
	if err != nil {
		return err
	}
	if len(installs) == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "no install command was sent to the subject's sandbox, so no denial was met")
	}
	log, lerr, ok := p.sidecarLog(5 * time.Second)
	if !ok {
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
			"target %s gives no access to the egress sidecar's log, and the sidecar records no denials anywhere else (CONTRACT §3.4), so whether the denied index was reached cannot be checked", s.env.opt.Target.Kind)
	}
	s.addEvidence(s.env.writeEvidence("drill", "d1-sidecar-log-"+s.slug()+".txt", []byte(log)))
	if lerr != nil && log == "" {
		return harnessf("the egress sidecar's log of sandbox %s could not be read: %v", p.sandboxID, lerr)
	}
	allowed := allowedLookups(log, p.applied)
	var index []string
	for _, h := range allowed {
		if isPackageHost(h) {
			index = append(index, h)
		}
	}
	if len(index) > 0 {
		return harnessf("the target's egress sidecar allowed %s after the drill denied the package index (its log shows egress.outbound for it): the target did not enforce its own policy, which is not the subject's doing", strings.Join(index, ", "))
	}
	s.note("the egress sidecar's log (%d bytes) shows no lookup of a package index host allowed after the deny (%d allowed lookup(s) of other hosts); it logs no denials (CONTRACT §3.4)", len(log), len(allowed))
	return nil
}

// allowedLookups are the hosts the sidecar's log shows allowed (event
// egress.outbound with target.host and no error) at or after since. Lines
// are "<engine timestamp> <JSON>"; a line whose timestamp cannot be read
// counts (fail safe).
func allowedLookups(log string, since time.Time) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		ts, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			continue
		}
		var ev map[string]any
		if json.Unmarshal([]byte(rest[i:]), &ev) != nil {
			continue
		}
		if ev["opensandbox.event"] != "egress.outbound" || ev["error"] != nil {
			continue
		}
		host, _ := ev["target.host"].(string)
		if host == "" {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil && t.Before(since) {
			continue
		}
		out = append(out, host)
	}
	return out
}

// installAttemptsReal counts the run's install commands on a real target
// (the recording proxy's execd calls); the asks of the index are not
// observable there (the sidecar logs no denials).
func installAttemptsReal(ctx context.Context, s *scenario, r *subjectRun, maxAttempts int) error {
	_, installs, err := realDeny(ctx, s, r)
	if err != nil {
		return err
	}
	s.addEvidence(filepath.Join(r.RelDir, "endpoint-calls.json"))
	s.note("install attempts %d (execd commands seen by the recording proxy); the package index's answers are not counted on target %s: its egress sidecar logs no denials (CONTRACT §3.4)", len(installs), s.env.opt.Target.Kind)
	if len(installs) > maxAttempts {
		return failf("the subject ran %d install commands; a denied index must not be retried more than %d times", len(installs), maxAttempts)
	}
	return nil
}
