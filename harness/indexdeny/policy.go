package indexdeny

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/summary"
)

// D1 on a real target. There is no admin API there, but the egress sidecar
// of a sandbox created with a networkPolicy has a runtime policy API
// (CONTRACT §3.3: /policy on port 18080, OPENSANDBOX-EGRESS-AUTH): PATCH
// /policy prepends its rules and replaces any rule with the same target, so
// a deny of the package index hosts wins over the subject's allow. The drill
// sends that PATCH as soon as the recording proxy has seen the subject's
// create answered (the earliest moment its sandbox exists: WhenCreated),
// through the endpoint the server returns for port 18080 with the header it
// gives, then reads GET /policy back (Apply). Where the sidecar has no such
// API (or the sandbox has no sidecar), the drill is not measured, saying
// why.

// Deny is what the drill did to the subject's sandbox on a real target.
type Deny struct {
	SandboxID string
	Requested time.Time // when the PATCH was sent
	Applied   time.Time // when it answered 200: the deny in effect from then on
	Patch     string    // the PATCH's status and body, for the evidence
	Policy    string    // GET /policy afterwards
	Why       string    // why it could not be applied ("" when applied)
	Absent    bool      // the sidecar has no runtime policy API (or the sandbox has no sidecar)
	Log       *SidecarLog
}

// SidecarLog is a sandbox's egress sidecar log as the target follows it
// (nil: the target gives no access to it).
type SidecarLog struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{} // closed when the follower ended (the sidecar stopped)
	err  error
}

// Follower follows sandbox id's sidecar log into w until ctx ends or the
// sidecar stops (core.Target.SidecarLog).
type Follower func(ctx context.Context, sandboxID string, w io.Writer) error

// Follow starts following sandbox id's sidecar log (nil when follow is nil:
// the target cannot).
func Follow(ctx context.Context, follow Follower, id string) *SidecarLog {
	if follow == nil {
		return nil
	}
	l := &SidecarLog{done: make(chan struct{})}
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

func (l *SidecarLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

// Read returns the log so far, waiting up to wait for the sidecar to stop
// (ok false: no log is followed).
func (l *SidecarLog) Read(wait time.Duration) (log string, err error, ok bool) {
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

// WhenCreated polls the command's recording proxy until a create it made
// was answered, then calls act with that sandbox (once). It reads what is
// recorded without waiting for calls in flight: the subject's readiness
// pings are always in flight, and waiting for them delayed the deny by up
// to 15 s in a full run.
func WhenCreated(ctx context.Context, rec *command.Record, act func(sandboxID string)) {
	for {
		if rec.Proxy != nil {
			for _, c := range rec.Proxy.Recorded() {
				if pc := command.ObservedCall(c); pc.Created && pc.SandboxID != "" {
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

// Apply resolves sandbox id's egress endpoint and PATCHes rules denying
// hosts; it starts following the sidecar's log where the target allows it.
func Apply(ctx context.Context, client *osb.Client, follow Follower, id string, hosts []string) *Deny {
	p := &Deny{SandboxID: id, Log: Follow(ctx, follow, id)}
	c, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	ep, err := client.GetEndpoint(c, id, osb.DefaultEgressPort, false)
	if err != nil || !ep.OK() {
		p.Why = fmt.Sprintf("the egress endpoint (port %d) of sandbox %s could not be resolved: %s", osb.DefaultEgressPort, id, resultErr(ep, err))
		return p
	}
	eg, err := client.Egress(ep.Value)
	if err != nil {
		p.Why = fmt.Sprintf("the egress endpoint %q of sandbox %s is not usable: %v", ep.Value.Endpoint, id, err)
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
		p.Requested = time.Now()
		res, err = eg.PatchPolicy(c, rules)
		if err == nil || time.Now().After(deadline) || c.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		// execd itself never answered: the harness could not inject its
		// fault (a sandbox without a sidecar answers 502, below).
		p.Why = fmt.Sprintf("PATCH /policy through sandbox %s's egress endpoint got no answer for %s (execd's /proxy/%d carries it): %v", id, time.Since(first).Round(time.Second), osb.DefaultEgressPort, err)
		return p
	}
	p.Patch = fmt.Sprintf("PATCH /policy %s → %d %s", mustJSON(rules), res.Status, excerpt(res.Body, 500))
	switch {
	case res.Status == http.StatusNotFound || res.Status == http.StatusMethodNotAllowed || res.Status == http.StatusNotImplemented:
		p.Absent = true
		p.Why = fmt.Sprintf("the egress sidecar of sandbox %s has no runtime policy API: PATCH /policy answered %d (%s)", id, res.Status, excerpt(res.Body, 200))
		return p
	case res.Status == http.StatusBadGateway || res.Status == http.StatusServiceUnavailable:
		p.Absent = true
		p.Why = fmt.Sprintf("nothing answered on port %d of sandbox %s (PATCH /policy: %d %s): a sandbox created without networkPolicy has no egress sidecar", osb.DefaultEgressPort, id, res.Status, excerpt(res.Body, 200))
		return p
	case !res.OK():
		p.Why = fmt.Sprintf("the egress sidecar of sandbox %s refused the deny: PATCH /policy answered %d (%s)", id, res.Status, excerpt(res.Body, 200))
		return p
	}
	p.Applied = time.Now()
	if got, err := eg.GetPolicy(c); err == nil {
		p.Policy = fmt.Sprintf("GET /policy → %d %s", got.Status, excerpt(got.Body, 2000))
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

func excerpt(b []byte, n int) string {
	s := string(b)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// Run is what D1's judgement on a real target reads of the subject's run.
type Run struct {
	Deny     *Deny // nil: no create of the subject was seen, so nothing was denied
	Started  time.Time
	ExitCode int
	Duration time.Duration
	Calls    []command.Call   // the recording proxy's calls (Record.ObservedCalls)
	Summary  *summary.Summary // nil: none usable
	Target   string           // the target's kind, for reasons
}

// Evidence is the drill's record of the deny ("" when there was none).
func (r Run) Evidence() string {
	p := r.Deny
	if p == nil {
		return ""
	}
	var ev strings.Builder
	fmt.Fprintf(&ev, "D1 on a real target: deny of the package index through the egress sidecar's runtime policy API\nsandbox: %s\n", p.SandboxID)
	if !p.Requested.IsZero() {
		fmt.Fprintf(&ev, "requested: %s (%s into the run)\n", p.Requested.UTC().Format(time.RFC3339Nano), p.Requested.Sub(r.Started).Round(time.Millisecond))
	}
	if !p.Applied.IsZero() {
		fmt.Fprintf(&ev, "applied: %s (%s into the run)\n", p.Applied.UTC().Format(time.RFC3339Nano), p.Applied.Sub(r.Started).Round(time.Millisecond))
	}
	fmt.Fprintf(&ev, "%s\n%s\n", p.Patch, p.Policy)
	if p.Why != "" {
		fmt.Fprintf(&ev, "not applied: %s\n", p.Why)
	}
	return ev.String()
}

// Precondition is the precondition of D1's checks on a real target: the
// deny was applied to the subject's sandbox before its first install
// command. It returns the run's install commands (through the recording
// proxy, in order).
func (r Run) Precondition() ([]string, error) {
	p := r.Deny
	if p == nil {
		return nil, command.NotMeasuredf(string(rubric.CategoryPreconditionUnmet),
			"no create of the subject was seen (it exited %d after %s), so there was no sandbox whose egress policy could deny the package index",
			r.ExitCode, r.Duration.Round(time.Millisecond))
	}
	if p.Why != "" {
		if !p.Absent {
			return nil, command.Harnessf("%s", p.Why)
		}
		return nil, command.NotMeasuredf(string(rubric.CategoryUnsupportedByTarget), "%s, so the package index could not be denied mid-run", p.Why)
	}
	var installs []string
	var first time.Time
	for _, c := range r.Calls {
		if c.SandboxID == "" || c.Command == "" || !PipInstall.MatchString(c.Command) {
			continue
		}
		if first.IsZero() || c.Time.Before(first) {
			first = c.Time
		}
		installs = append(installs, c.Command)
	}
	if !first.IsZero() && first.Before(p.Applied) {
		return installs, command.NotMeasuredf(string(rubric.CategoryPreconditionUnmet),
			"the subject's first install command started %s into the run, before the deny took effect (%s into the run), so its install may not have met the denial",
			first.Sub(r.Started).Round(time.Millisecond), p.Applied.Sub(r.Started).Round(time.Millisecond))
	}
	return installs, nil
}

// ReachedForIndex is D1's precondition on a real target: the deny was in
// place, an install command ran after it (seen by the recording proxy), and
// the install did need the index (a failed install step, or pip output that
// shows it asked). An install satisfied from the image never meets the
// denial: not measured.
func (r Run) ReachedForIndex(installs []string) (string, error) {
	if len(installs) == 0 {
		if !r.ranThroughProxy() {
			return "", command.NotMeasuredf(string(rubric.CategoryUnsupportedByTarget),
				"the recording proxy saw none of the subject's execd calls (it does not reach execd through the endpoints the server returned), so whether it ran an install cannot be seen on target %s", r.Target)
		}
		return "", command.NotMeasuredf(string(rubric.CategoryPreconditionUnmet),
			"no install command (pip install) was sent to the subject's sandbox (it exited %d), so the denial was never met", r.ExitCode)
	}
	if r.Summary != nil && !r.installFailed() {
		// The subject did reach for its packages; the target's sandbox image
		// had them (an image given with --sandbox-image, say: the docker
		// target's own carries no tabulate), so pip never asked the index: a
		// property of the target, not of the subject.
		return "", command.NotMeasuredf(string(rubric.CategoryUnsupportedByTarget),
			"the subject's install (%d command(s)) succeeded without the package index: the target's sandbox image already had what it asked for (an image other than the docker target's own, which carries no tabulate), so the denial was never met (the bundled server's sandboxes lack the package, so there it is)", len(installs))
	}
	return fmt.Sprintf("the package index was denied in sandbox %s through its egress policy API %s into the run; %d install command(s) after it",
		r.Deny.SandboxID, r.Deny.Applied.Sub(r.Started).Round(time.Millisecond), len(installs)), nil
}

// ranThroughProxy: the recording proxy saw at least one execd call of the run.
func (r Run) ranThroughProxy() bool {
	for _, c := range r.Calls {
		if _, ok := command.ExecdPath(c.Path); ok && c.SandboxID != "" {
			return true
		}
	}
	return false
}

// installFailed: a step of the summary ran pip install and failed.
func (r Run) installFailed() bool {
	for _, st := range r.Summary.Steps {
		if st.ExitCode != nil && *st.ExitCode != 0 && (PipInstall.MatchString(st.Command) || strings.Contains(strings.ToLower(st.Name), "install")) {
			return true
		}
	}
	return false
}

// IndexDenied is the network check of D1 on a real target, on the sidecar's
// log (SidecarLog.Read: log, lerr, ok). The real sidecar logs no denials
// (CONTRACT §3.4), but it logs every lookup it allows (opensandbox.event
// egress.outbound with target.host): a package index host allowed after
// the deny took effect would show there. The check needs that log (the
// docker target follows it); elsewhere it is not measured.
func (r Run) IndexDenied(installs []string, log string, lerr error, ok bool) (string, error) {
	if len(installs) == 0 {
		return "", command.NotMeasuredf(string(rubric.CategoryPreconditionUnmet), "no install command was sent to the subject's sandbox, so no denial was met")
	}
	if !ok {
		return "", command.NotMeasuredf(string(rubric.CategoryUnsupportedByTarget),
			"target %s gives no access to the egress sidecar's log, and the sidecar records no denials anywhere else (CONTRACT §3.4), so whether the denied index was reached cannot be checked", r.Target)
	}
	if lerr != nil && log == "" {
		return "", command.Harnessf("the egress sidecar's log of sandbox %s could not be read: %v", r.Deny.SandboxID, lerr)
	}
	allowed := AllowedLookups(log, r.Deny.Applied)
	var index []string
	for _, h := range allowed {
		if IsPackageHost(h) {
			index = append(index, h)
		}
	}
	if len(index) > 0 {
		return "", command.Harnessf("the target's egress sidecar allowed %s after the drill denied the package index (its log shows egress.outbound for it): the target did not enforce its own policy, which is not the subject's doing", strings.Join(index, ", "))
	}
	return fmt.Sprintf("the egress sidecar's log (%d bytes) shows no lookup of a package index host allowed after the deny (%d allowed lookup(s) of other hosts); it logs no denials (CONTRACT §3.4)", len(log), len(allowed)), nil
}

// InstallAttempts counts the run's install commands on a real target (the
// recording proxy's execd calls); the asks of the index are not observable
// there (the sidecar logs no denials). More than maxAttempts fails.
func (r Run) InstallAttempts(installs []string, maxAttempts int) (string, error) {
	note := fmt.Sprintf("install attempts %d (execd commands seen by the recording proxy); the package index's answers are not counted on target %s: its egress sidecar logs no denials (CONTRACT §3.4)", len(installs), r.Target)
	if len(installs) > maxAttempts {
		return note, command.Failf("the subject ran %d install commands; a denied index must not be retried more than %d times", len(installs), maxAttempts)
	}
	return note, nil
}

// AllowedLookups are the hosts the sidecar's log shows allowed (event
// egress.outbound with target.host and no error) at or after since. Lines
// are "<engine timestamp> <JSON>"; a line whose timestamp cannot be read
// counts (fail safe).
func AllowedLookups(log string, since time.Time) []string {
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

// DeniedLookup is a denial an egress sidecar logged.
type DeniedLookup struct{ Host, Line string }

// DeniedLookups are the denials a sidecar's log records: a JSON line whose
// msg is `[dns] denied by policy (remote=… question="host")`, the form
// upstream's DNS proxy logs them in at later commits (the build measured
// here, 3bb6fad3d8b6, logs none; the stand-in logs none, as that build).
func DeniedLookups(log string) []DeniedLookup {
	var out []DeniedLookup
	for _, line := range strings.Split(log, "\n") {
		i := strings.IndexByte(line, '{')
		if i < 0 || !strings.Contains(line, "denied by policy") {
			continue
		}
		var ev struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line[i:]), &ev) != nil || !strings.HasPrefix(ev.Msg, "[dns] denied by policy") {
			continue
		}
		_, q, ok := strings.Cut(ev.Msg, `question="`)
		if !ok {
			continue
		}
		host, _, ok := strings.Cut(q, `"`)
		if ok && host != "" {
			out = append(out, DeniedLookup{Host: strings.TrimSuffix(host, "."), Line: ev.Msg})
		}
	}
	return out
}
