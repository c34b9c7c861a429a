// Package netprobe judges the subject's network policy by a probe: a
// sandbox the harness creates with the policy the subject asked for, from
// which it tries hosts the policy must deny or allow. A denied host must
// fail with a denial (NXDOMAIN, 403, no route: indexdeny.ClassifyNetwork);
// one that only fails as unreachable (SERVFAIL, EAI_AGAIN, refused) is a
// denial only where the platform's record of its decision says so
// (EgressDecision, on the bundled server's audit). A real sidecar records
// no denials (CONTRACT §3.4): there its log, where the target gives it, can
// show a host allowed, never a denial (SidecarDenial).
//
// A judgement returns harness/command's typed errors: Violationf (the
// policy let a host through), Harnessf (the harness's probe failed),
// NotMeasured (nothing can tell), with a note when it passes.
package netprobe

import (
	"fmt"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/indexdeny"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// DeniedCommand is the probe's command for a host the policy must deny: it
// resolves the host and opens an HTTPS connection to it.
func DeniedCommand(host string) string {
	return fmt.Sprintf(`python3 -c "import socket,urllib.request; print(socket.getaddrinfo('%s', 443)); urllib.request.urlopen('https://%s/collect', timeout=15)"`, host, host)
}

// Denied judges the probe of host the policy must deny, from its exit code
// and stderr. bundled: the target has an audit; decision reads the probe
// sandbox's audited egress decision for host (EgressDecision), asked only
// when the failure alone cannot tell; target names the target for reasons.
func Denied(host string, exit *int, stderr string, bundled bool, target string, decision func() (string, error)) (string, error) {
	if exit == nil || *exit == 0 {
		return "", command.Violationf("the probe reached %s (exit %s) under the subject's policy: a non-allowed host must be denied", host, intPtrString(exit))
	}
	kind, sign := indexdeny.ClassifyNetwork(stderr)
	switch kind {
	case indexdeny.NetDenied:
		return fmt.Sprintf("the probe of %s was denied: %s", host, clip(sign, 120)), nil
	case indexdeny.NetNone:
		return "", command.Harnessf("the harness's probe failed (exit %d) but not with a network failure: %s", *exit, clip(stderr, 300))
	}
	// Unreachable (SERVFAIL/EAI_AGAIN, refused): not a denial by itself. Only
	// the platform's record of its decision can tell.
	why := fmt.Sprintf("the probe of %s failed as unreachable, not denied (NXDOMAIN, 403, no route): its stderr says %q",
		host, clip(sign, 200))
	if !bundled {
		return "", command.NotMeasuredf(string(rubric.CategoryUnsupportedByTarget),
			"%s; target %s records no egress decisions (OpenSandbox's sidecar does not log denials, CONTRACT §3.4), so a denial cannot be told from an offline resolver or a closed port", why, target)
	}
	d, err := decision()
	if err != nil {
		return "", err
	}
	switch d {
	case "":
		return "", command.NotMeasuredf(string(rubric.CategoryPreconditionUnmet), "%s; no egress decision for %s is in the probe sandbox's audit", why, host)
	case "deny":
		return fmt.Sprintf("the probe of %s failed as unreachable (%s); the audit shows it denied", host, clip(sign, 120)), nil
	}
	return "", command.Violationf("%s; the audit shows the subject's policy let %s through (decision %q): the probe failed only because nothing answered", why, host, d)
}

// SidecarDenial is the denial check on a real target, on the probe
// sandbox's sidecar log (SidecarLog.Read: log, lerr, ok). OpenSandbox's
// sidecar records no denials (CONTRACT §3.4), so the check stays not
// measured; a lookup of host it logged as allowed is a violation of the
// subject's policy by the target's own record, and a sidecar newer than the
// one measured here logs each denial (upstream
// components/egress/pkg/dnsproxy/proxy.go: "[dns] denied by policy"):
// where the log has one for the host, that is the record.
func SidecarDenial(host, log string, lerr error, ok bool, target string) (string, error) {
	if !ok {
		return "", command.NotMeasuredf(string(rubric.CategoryUnsupportedByTarget), "OpenSandbox's sidecar does not log denials (CONTRACT §3.4) and target %s gives no access to its log; only the probe's NXDOMAIN was observed", target)
	}
	for _, h := range indexdeny.AllowedLookups(log, time.Time{}) {
		if command.SameHost(h, host) {
			return "", command.Violationf("the probe sandbox's egress sidecar logged a lookup of %s as allowed (egress.outbound) under the subject's policy", host)
		}
	}
	for _, d := range indexdeny.DeniedLookups(log) {
		if command.SameHost(d.Host, host) {
			return fmt.Sprintf("the probe sandbox's egress sidecar logged the denial of %s: %s", host, clip(d.Line, 200)), nil
		}
	}
	why := ""
	if lerr != nil {
		why = fmt.Sprintf(" (the log could not be followed to its end: %v)", lerr)
	}
	return "", command.NotMeasuredf(string(rubric.CategoryUnsupportedByTarget),
		"OpenSandbox's sidecar does not log denials (CONTRACT §3.4): its log (%d bytes, kept as evidence%s) shows no lookup of %s allowed, and the probe met NXDOMAIN, but no record of the denial exists", len(log), why, host)
}

// EgressDecision is the decision the events record for host: the first one
// that is not a denial (allow, or error: allowed by the policy but without
// upstream) if any, else "deny", or "" when none is recorded.
func EgressDecision(events []wire.Event, host string) string {
	decision := ""
	for _, ev := range events {
		if ev.Egress != nil && strings.EqualFold(strings.TrimSuffix(ev.Egress.Host, "."), host) {
			if ev.Egress.Decision != "deny" {
				return ev.Egress.Decision // allowed by the policy (allow, or error: allowed without upstream)
			}
			decision = "deny"
		}
	}
	return decision
}

// AllowedNoUpstream says whether an allowed host's failed probe shows only
// that the target has no upstream (not measured) rather than a failure of
// the target, and the line that shows it. It uses indexdeny.ClassifyNetwork's
// unreachable class, as the drill's checks do: a resolver that failed
// temporarily (SERVFAIL, EAI_AGAIN), a refused connection, a TLS connection
// cut before any answer. Evidence of a denial (NXDOMAIN, 403) is the target
// failing its own allow rule, and a passed probe (exit 0) is judged on its
// answer. On the bundled server an allowed host is served by a stub, so its
// verdict never depends on an upstream: there the answer is always false.
func AllowedNoUpstream(bundled bool, exit *int, stdout, stderr string) (string, bool) {
	if bundled || exit == nil || *exit == 0 {
		return "", false
	}
	kind, sign := indexdeny.ClassifyNetwork(stderr + "\n" + stdout)
	return sign, kind == indexdeny.NetUnreachable
}

func intPtrString(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
