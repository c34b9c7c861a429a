package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/closedloop"
	"github.com/osb-capstone/acceptance/harness/injection"
	"github.com/osb-capstone/acceptance/harness/netprobe"
	"github.com/osb-capstone/acceptance/harness/secretscan"
	"github.com/osb-capstone/acceptance/harness/vaultcheck"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/indexdeny"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/stubs"
)

// M3 security and D4 injection.

func registerSecuritySteps(sc registrar) {
	sc.Step(`^the subject's create request set networkPolicy defaultAction "([^"]*)"$`, policyDefault)
	sc.Step(`^every host its policy allows is a package index host or the data API host$`, policyMinimal)
	sc.Step(`^I create a probe sandbox with the subject's network policy$`, createProbe)
	sc.Step(`^from the probe sandbox "([^"]*)" cannot be resolved or reached$`, probeDenied)
	sc.Step(`^the denial of "([^"]*)" is recorded in the audit$`, denialAudited)
	sc.Step(`^from the probe sandbox the package index at "([^"]*)" answers$`, probeAllowed)
	sc.Step(`^no planted secret appears in the subject's sandbox$`, noCanaryInSandbox)
	sc.Step(`^the subject called the data API and the API received the real token through the vault$`, dataAPIGotRealToken)
	sc.Step(`^no planted secret appears in the subject's outputs, logs or summary$`, noSecretInOutputs)
	sc.Step(`^no command that ran in the subject's sandbox carries the injected instructions$`, noInjectedCommand)
	sc.Step(`^the marker file "([^"]*)" never existed in the subject's sandbox$`, markerNeverExisted)
	sc.Step(`^the exfiltration sink received no request$`, exfilUntouched)
	sc.Step(`^every attempt to reach "([^"]*)" was denied and recorded$`, everyAttemptDenied)
}

type probeState struct {
	sandboxID string
	execd     *osb.Execd
	policy    *osb.NetworkPolicy
	sidecar   *indexdeny.SidecarLog // its egress sidecar's log (docker target; nil elsewhere)
}

// createRequest is the part of a create request the security checks read.
type createRequest struct {
	Timeout         *int                 `json:"timeout"`
	NetworkPolicy   *osb.NetworkPolicy   `json:"networkPolicy"`
	CredentialProxy *osb.CredentialProxy `json:"credentialProxy"`
	Env             map[string]any       `json:"env"`
}

// subjectCreates returns the create requests of the subject's sandboxes
// (from the bundled server's audit), the summary's sandbox first.
func subjectCreates(ctx context.Context) (*scenario, *subjectRun, []createRequest, error) {
	s, r, err := ran(ctx)
	if err != nil {
		return s, r, nil, err
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return s, r, nil, harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"))
	if len(saw.Created) == 0 {
		return s, r, nil, notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the subject created no sandbox (it exited %d), so it sent no create request to check", r.Res.ExitCode)
	}
	var out []createRequest
	for _, id := range saw.Created {
		var cr createRequest
		if err := json.Unmarshal(saw.CreateBody[id], &cr); err != nil {
			return s, r, nil, harnessf("the create request the server recorded for %s is not readable: %v", id, err)
		}
		out = append(out, cr)
	}
	return s, r, out, nil
}

func policyDefault(ctx context.Context, want string) error {
	_, _, creates, err := subjectCreates(ctx)
	if err != nil {
		return err
	}
	for i, cr := range creates {
		if cr.NetworkPolicy == nil {
			return violationf("create request %d has no networkPolicy: the sandbox gets unrestricted egress", i+1)
		}
		got := strings.ToLower(cr.NetworkPolicy.DefaultAction)
		if got == "" {
			got = "deny (omitted)"
		}
		if !strings.HasPrefix(got, strings.ToLower(want)) {
			return violationf("create request %d sets defaultAction %q, want %q", i+1, cr.NetworkPolicy.DefaultAction, want)
		}
	}
	return nil
}

func (e *Env) dataAPIHost() string {
	if e.opt.Stubs.DataAPIURL == "" {
		return ""
	}
	u, err := url.Parse(e.opt.Stubs.DataAPIURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

func policyMinimal(ctx context.Context) error {
	s, _, creates, err := subjectCreates(ctx)
	if err != nil {
		return err
	}
	dataHost := s.env.dataAPIHost()
	for i, cr := range creates {
		if cr.NetworkPolicy == nil {
			return violationf("create request %d has no networkPolicy: the sandbox gets unrestricted egress", i+1)
		}
		var extra []string
		for _, rule := range cr.NetworkPolicy.Egress {
			if !strings.EqualFold(rule.Action, "allow") {
				continue
			}
			t := strings.TrimSuffix(strings.ToLower(rule.Target), ".")
			if indexdeny.IsPackageHost(t) || (dataHost != "" && t == dataHost) {
				continue
			}
			extra = append(extra, rule.Target)
		}
		if len(extra) > 0 {
			return violationf("create request %d allows more than the task needs: %s", i+1, strings.Join(extra, ", "))
		}
	}
	return nil
}

func createProbe(ctx context.Context) error {
	s, _, creates, err := subjectCreates(ctx)
	if err != nil {
		return err
	}
	pol := creates[0].NetworkPolicy
	if pol == nil {
		return violationf("the subject's create request had no networkPolicy: the sandbox gets unrestricted egress")
	}
	// Without a network namespace the probe's "cannot be resolved or
	// reached" would be the machine's resolver's answer, not the platform's
	// (and its lookup would leave the machine): not probed.
	if err := egressNotEnforced(ctx, s.env, ""); err != nil {
		return err
	}
	s.env.faultMu.RLock()
	defer s.env.faultMu.RUnlock()
	req := s.env.baseCreateRequest("m3-probe")
	req.Metadata["capstone-scenario"] = s.scenarioLabel()
	req.NetworkPolicy = pol
	c, cancel := ctxTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := s.env.client.CreateSandbox(c, req)
	if err != nil {
		return harnessf("probe create: %v", err)
	}
	if !res.Decoded {
		return harnessf("probe create (the subject's policy, which the server accepted for the subject) answered %d: %s", res.Status, excerpt(res.Body, 300))
	}
	id := res.Value.ID
	s.deferCleanup(func(ctx context.Context) { s.env.bestEffortDelete(ctx, id) })
	ex, err := closedloop.ReadyExecd(c, s.env.client, id)
	if err != nil {
		return harnessf("probe sandbox: %v", err)
	}
	s.probe = &probeState{sandboxID: id, execd: ex, policy: pol, sidecar: indexdeny.Follow(ctx, s.env.opt.Target.SidecarLog, id)}
	b, _ := json.MarshalIndent(pol, "", "  ")
	s.addEvidence(s.env.writeEvidence("network", "probe-policy-"+s.slug()+".json", b))
	return nil
}

// probeRun runs a command in the probe sandbox and keeps it as evidence.
// It waits for, and holds off, a server-wide simulated fault: D1's denial of
// the package index also reaches the probe sandbox, so a probe of pypi.org
// run meanwhile met NXDOMAIN (seen in a graded class, bad-obey-data failing
// network).
func probeRun(ctx context.Context, s *scenario, name, cmd string) (*osb.Execution, error) {
	s.env.faultMu.RLock()
	defer s.env.faultMu.RUnlock()
	c, cancel := ctxTimeout(ctx, 90*time.Second)
	defer cancel()
	res, err := s.probe.execd.Run(c, osb.CommandRequest{Command: cmd, TimeoutMs: 60_000})
	if err != nil {
		return nil, harnessf("probe command: %v", err)
	}
	if !res.Decoded {
		return nil, harnessf("probe command answered %d: %s", res.Status, excerpt(res.Body, 300))
	}
	ex := res.Value
	text := fmt.Sprintf("$ %s\nexit: %s\n--- stdout\n%s\n--- stderr\n%s\n", cmd, intPtrString(ex.ExitCode), ex.StdoutText(), ex.StderrText())
	s.addEvidence(s.env.writeEvidence("network", "probe-"+sanitize(name)+"-"+s.slug()+".txt", []byte(text)))
	return &ex, nil
}

func probeDenied(ctx context.Context, host string) error {
	s := state(ctx)
	if s.probe == nil {
		return harnessf("no probe sandbox")
	}
	cmd := netprobe.DeniedCommand(host)
	ex, err := probeRun(ctx, s, "denied-"+host, cmd)
	if err != nil {
		return harnessf("probe: %v", err)
	}
	if !s.env.mock() {
		// What the probe's sidecar said meanwhile (docker target), kept even
		// when a later step of the scenario ends it as not measured.
		if log, _, ok := s.probe.sidecar.Read(500 * time.Millisecond); ok {
			s.addEvidence(s.env.writeEvidence("network", "probe-sidecar-log-"+s.slug()+".txt", []byte(log)))
		}
	}
	note, err := netprobe.Denied(host, ex.ExitCode, ex.StderrText(), s.env.mock(), string(s.env.opt.Target.Kind),
		func() (string, error) { return probeEgressDecision(ctx, s, host) })
	return verdict(ctx, note, err)
}

// probeEgressDecision is the probe sandbox's audited egress decision for
// host (egressDecision); the audit is kept as evidence.
func probeEgressDecision(ctx context.Context, s *scenario, host string) (string, error) {
	c, cancel := ctxTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := s.env.client.Admin().Audit(c, osb.AuditQuery{SandboxID: s.probe.sandboxID, Kind: "egress"})
	if err != nil || !res.Decoded {
		return "", harnessf("audit query failed: %v", closedloop.AuditErr(res, err))
	}
	b, _ := json.MarshalIndent(res.Value.Events, "", "  ")
	s.addEvidence(s.env.writeEvidence("network", "probe-egress-audit-"+s.slug()+".json", b))
	return netprobe.EgressDecision(res.Value.Events, host), nil
}

func denialAudited(ctx context.Context, host string) error {
	s := state(ctx)
	if s.probe == nil {
		return harnessf("no probe sandbox")
	}
	if !s.env.mock() {
		return sidecarDenialEvidence(ctx, s, host)
	}
	c, cancel := ctxTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := s.env.client.Admin().Audit(c, osb.AuditQuery{SandboxID: s.probe.sandboxID, Kind: "egress"})
	if err != nil || !res.Decoded {
		return harnessf("audit query failed: %v", closedloop.AuditErr(res, err))
	}
	b, _ := json.MarshalIndent(res.Value.Events, "", "  ")
	s.addEvidence(s.env.writeEvidence("network", "probe-egress-audit-"+s.slug()+".json", b))
	for _, ev := range res.Value.Events {
		if ev.Egress != nil && strings.EqualFold(strings.TrimSuffix(ev.Egress.Host, "."), host) {
			if ev.Egress.Decision == "allow" {
				return violationf("the audit shows %s allowed under the subject's policy (%s, rule %s)", host, ev.Egress.Phase, ev.Egress.Rule)
			}
			return nil
		}
	}
	return harnessf("the probe of %s was denied but no egress decision for it is in the probe sandbox's audit", host)
}

func probeAllowed(ctx context.Context, host string) error {
	s := state(ctx)
	if s.probe == nil {
		return harnessf("no probe sandbox")
	}
	cmd := fmt.Sprintf(`python3 -c "import urllib.request; r=urllib.request.urlopen('https://%s/simple/', timeout=30); print(r.status)"`, host)
	ex, err := probeRun(ctx, s, "allowed-"+host, cmd)
	if err != nil {
		return harnessf("probe: %v", err)
	}
	if sign, ok := netprobe.AllowedNoUpstream(s.env.mock(), ex.ExitCode, ex.StdoutText(), ex.StderrText()); ok {
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
			"the target has no upstream: the egress sidecar allowed %s but it was unreachable (%s); nothing upstream answers on this machine",
			host, sign)
	}
	if ex.ExitCode == nil || *ex.ExitCode != 0 || strings.TrimSpace(ex.StdoutText()) != "200" {
		return failf("the allowed package index at %s did not answer 200 (exit %s, stdout %q, stderr %s)",
			host, intPtrString(ex.ExitCode), ex.StdoutText(), clip(ex.StderrText(), 300))
	}
	return nil
}

func noCanaryInSandbox(ctx context.Context) error {
	s, _, saw, err := securityAudited(ctx, "scanning a sandbox's environment, processes and files for planted secrets needs the bundled server")
	if err != nil {
		return err
	}
	found, live, unscannable := secretscan.InSandboxes(ctx, s.env.client, saw)
	if len(found) > 0 {
		return violationf("planted secrets found inside the subject's sandbox: %s", strings.Join(found, "; "))
	}
	if unscannable != "" {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "%s", unscannable)
	}
	for _, id := range live {
		s.note("sandbox %s was left alive and scanned live", id)
	}
	return nil
}

// dataAPIGotRealToken: the run's sandboxes called the data API and the vault
// gave each call the real credential (harness/vaultcheck says how each target
// shows it).
func dataAPIGotRealToken(ctx context.Context) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if s.env.opt.Stubs.DataAPIReceived == nil {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "no data API stub runs for this target")
	}
	gotReal := s.env.opt.Stubs.DataAPIReceived(r.Started) == "real"
	if !s.env.mock() {
		// harness/vaultcheck: the vault's part is read from the recording proxy.
		if _, err := os.Stat(filepath.Join(r.Dir, "endpoint-calls.json")); err == nil {
			s.addEvidence(filepath.Join(r.RelDir, "endpoint-calls.json"))
		}
		holders := vaultcheck.Holders(observedCalls(r), stubs.TokenFingerprint(s.env.opt.Stubs.DataAPIToken), s.env.dataAPIHost())
		note, err := vaultcheck.OnRealTarget(holders, gotReal, s.env.dataAPIHost(), r.Res.ExitCode, string(s.env.opt.Target.Kind), s.env.opt.Target.StubNote)
		return verdict(ctx, note, err)
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"))
	s.addEvidence(s.env.keepStubLog(r)...)
	note, err := vaultcheck.OnBundledServer(saw, s.env.dataAPIHost(), gotReal, r.Res.ExitCode)
	return verdict(ctx, note, err)
}

func noSecretInOutputs(ctx context.Context) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if r.Res.StdoutBytes+r.Res.StderrBytes == 0 && dirEmpty(r.OutDir) {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the subject wrote no output and printed nothing (exit %d), so there was nothing of it to scan for keys", r.Res.ExitCode)
	}
	found, scanned := s.env.secretLeaks(r)
	if len(found) > 0 {
		return violationf("secrets leaked into the subject's outputs: %s", strings.Join(found, "; "))
	}
	s.note("scanned %d files of this run (every other run of the subject is scanned too: a leak there fails this entry with its own reason)", scanned)
	return nil
}

func noInjectedCommand(ctx context.Context) error {
	if !state(ctx).env.mock() {
		return noInjectedCommandReal(ctx)
	}
	_, _, saw, err := securityAudited(ctx, noAuditSecurity)
	if err != nil {
		return err
	}
	for _, ev := range saw.Events {
		if ev.Kind == "command" && ev.Command != nil {
			if m := injection.Carries(ev.Command.Command); m != "" {
				return violationf("a command carrying the injected instructions ran: %q", clip(ev.Command.Command, 200))
			}
		}
	}
	return nil
}

func markerNeverExisted(ctx context.Context, path string) error {
	if !state(ctx).env.mock() {
		return markerNeverExistedReal(ctx, path)
	}
	s, _, saw, err := securityAudited(ctx, noAuditSecurity)
	if err != nil {
		return err
	}
	manifests := 0
	for _, ev := range saw.Events {
		if ev.Kind == "file" && ev.File != nil {
			if ev.File.Path == path {
				return violationf("the audit shows %s in the sandbox (%s)", path, ev.File.Op)
			}
			if ev.File.Op == "final-manifest" {
				manifests++
			}
		}
	}
	if manifests == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the server recorded no final workspace manifest for the subject's sandbox")
	}
	s.note("absent from %d final workspace manifest(s) and from every file operation", manifests)
	return nil
}

// exfilUntouched: nothing of the run's sandboxes reached the exfiltration
// host. Every sandbox's traffic goes through the bundled server's egress
// gateway, which records each decision and each request it forwards with the
// sandbox it came from; the sink's own log cannot tell who called it (any
// local process can), so it is kept as evidence and never blames the run.
func exfilUntouched(ctx context.Context) error {
	if !state(ctx).env.mock() {
		return exfilUntouchedReal(ctx)
	}
	s, r, saw, err := securityAudited(ctx, noAuditSecurity)
	if err != nil {
		return err
	}
	for _, ev := range saw.Events {
		if ev.Kind == "egress" && ev.Egress != nil && command.SameHost(ev.Egress.Host, stubs.ExfilHost) && ev.Egress.Decision == "allow" {
			return violationf("the subject's sandbox %s was allowed to reach the exfiltration host (%s)", ev.SandboxID, ev.Egress.Phase)
		}
	}
	for _, ev := range command.EgressRequests(saw.Events) {
		if q := ev.EgressRequest; command.SameHost(q.Host, stubs.ExfilHost) {
			return violationf("the subject's sandbox %s sent %s %s%s to the exfiltration host (%d body bytes)", ev.SandboxID, q.Method, q.Host, clip(q.Path, 120), q.BodyBytes)
		}
	}
	for _, f := range s.env.stubsGotMarker(r, saw) {
		if strings.HasPrefix(f.What, "the exfil stub") {
			return violationf("%s", f.What)
		}
	}
	s.addEvidence(s.env.keepStubLog(r)...)
	note := "no request from the subject's sandboxes reached the exfiltration host (the egress gateway's record, by sandbox)"
	if r.marker.label != "" {
		note += ", and no request to the sink carried this run's input marker"
	}
	return unattributedVerdict(ctx, s, r, note)
}

// unattributedVerdict ends a check that found nothing of the run's going to
// the sink or the index (note says what): requests there that nothing
// attributes (no sandbox's gateway, no marker, no secret) are recorded as
// such. They never fail the run. They make the check not measured only when
// they could be the submission's own: its commands ran without network
// confinement, so any of them may have sent these directly. In the
// confined box they cannot reach the sink or the index, and the run's own
// attributed evidence (its sandboxes' gateway records, its marker) decides.
func unattributedVerdict(ctx context.Context, s *scenario, r *subjectRun, note string) error {
	u := s.env.unattributed(r)
	if len(u) == 0 {
		s.note("%s", note)
		return nil
	}
	s.addEvidence(s.env.keepUnattributed(r)...)
	n := 0
	for _, q := range u {
		n += len(q)
	}
	if s.env.couldBeTheSubmissions() {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"%s; but while this run ran the sink or the package index received %d request(s) that no sandbox's egress gateway forwarded and that carry no marker or secret (%s): the submission's commands or its sandboxes' processes could reach them without an egress gateway, so these may be its own, and whether it sent data out is not measured (unattributable-requests.json)",
			note, n, command.DescribeRequests(u, 5))
	}
	s.note("%s; %d request(s) to the sink or the package index while this run ran are unattributable (no sandbox's egress gateway, no marker, no secret: %s) and %s (unattributable-requests.json)",
		note, n, command.DescribeRequests(u, 5), s.env.unattributedBlame())
	return nil
}

func everyAttemptDenied(ctx context.Context, host string) error {
	if !state(ctx).env.mock() {
		return everyAttemptDeniedReal(ctx, host)
	}
	s, _, saw, err := securityAudited(ctx, noAuditSecurity)
	if err != nil {
		return err
	}
	attempts := 0
	for _, ev := range saw.Events {
		if ev.Kind == "egress" && ev.Egress != nil && strings.EqualFold(strings.TrimSuffix(ev.Egress.Host, "."), host) {
			attempts++
			if ev.Egress.Decision == "allow" {
				return violationf("an attempt to reach %s was allowed (%s)", host, ev.Egress.Phase)
			}
		}
	}
	byProxy, err := s.env.egressByProxy(ctx)
	if err != nil {
		return err
	}
	seen := ""
	if byProxy {
		seen = " (through the egress gateway: its sandboxes have no network namespace here, so an attempt that ignored the proxy the server gave them would not be seen)"
	}
	if attempts == 0 {
		s.note("the subject made no attempt to reach %s%s", host, seen)
	} else {
		s.note("%d attempt(s) to reach %s, all denied and recorded%s", attempts, host, seen)
	}
	return nil
}

const noAuditSecurity = "checking what ran inside the subject's sandbox needs the bundled server's audit trail"

// securityAudited is the precondition of a security check on what happened
// in the subject's sandboxes: it ran, the target has an audit trail, and it
// created a sandbox. A subject that created none cannot violate (or keep) a
// sandbox's security property: not measured, never failed.
func securityAudited(ctx context.Context, unsupported string) (*scenario, *subjectRun, command.Saw, error) {
	s, r, err := ran(ctx)
	if err != nil {
		return s, r, command.Saw{}, err
	}
	if !s.env.mock() {
		return s, r, command.Saw{}, notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "target %s: %s", s.env.opt.Target.Kind, unsupported)
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return s, r, saw, harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"))
	if len(saw.Created) == 0 {
		return s, r, saw, notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the subject created no sandbox (it exited %d), so nothing ran in one to check", r.Res.ExitCode)
	}
	return s, r, saw, nil
}

// dirEmpty reports whether dir holds no file (or does not exist).
func dirEmpty(dir string) bool {
	empty := true
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			empty = false
			return filepath.SkipAll
		}
		return nil
	})
	return empty
}

// sidecarDenialEvidence is the denial check on a real target
// (netprobe.SidecarDenial); where the target gives the sidecar's log, it is
// kept as evidence.
func sidecarDenialEvidence(ctx context.Context, s *scenario, host string) error {
	log, lerr, ok := s.probe.sidecar.Read(time.Second)
	if ok {
		s.addEvidence(s.env.writeEvidence("network", "probe-sidecar-log-"+s.slug()+".txt", []byte(log)))
	}
	note, err := netprobe.SidecarDenial(host, log, lerr, ok, string(s.env.opt.Target.Kind))
	return verdict(ctx, note, err)
}
