// Package indexdeny is drill D1's machinery: the package index denied to
// the subject's sandbox mid-run. It says which hosts are the package index
// (IsPackageHost) and which commands install from it (PipInstall), reads a
// failed step's output for the kind of network failure it shows
// (ClassifyNetwork: a denial, or an index merely unreachable), and counts
// what the bundled server's audit recorded of the subject's installs, its
// asks of the index and the egress gateway's denials (Count).
//
// On a real target there is no admin API to deny with; the drill denies the
// index through the subject's sandbox's own egress sidecar (policy.go:
// Apply, CONTRACT §3.3's runtime policy API) and judges on what the
// recording proxy and the sidecar's log show (Run). Where the sidecar has
// no such API, or the sandbox has none, the drill is not measured, saying
// why.
//
// A judgement returns the typed errors of harness/command: NotMeasured
// (the drill's precondition unmet, or the target unable to show it),
// Harnessf (the target's or the grader's fault), Violationf (D1's own
// property, bounded retries) and Failf; with no error, a note for the
// report. The steps only phrase them for a scenario.
package indexdeny

import (
	"regexp"
	"strings"

	"github.com/osb-capstone/acceptance/harness/summary"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// PackageHosts are the hosts a package install legitimately needs.
var PackageHosts = []string{"pypi.org", "files.pythonhosted.org", "*.pythonhosted.org", "*.pypi.org"}

func IsPackageHost(h string) bool {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	for _, p := range PackageHosts {
		if h == p || (strings.HasPrefix(p, "*.") && strings.HasSuffix(h, p[1:])) {
			return true
		}
	}
	return false
}

// PipInstall matches a command that installs packages with pip (pip, pip3, python -m pip).
var PipInstall = regexp.MustCompile(`\bpip[0-9.]*\s+(?:[^|;&]*\s)?install\b`)

// What a failed network access looks like from inside a sandbox, as pip,
// python, urllib, requests and curl print it, in two kinds (ClassifyNetwork):
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

// NetFailure is the kind of a failed network access (ClassifyNetwork).
type NetFailure int

const (
	NetNone        NetFailure = iota // no network failure in the text
	NetDenied                        // evidence of a denial
	NetUnreachable                   // a network failure that is not, by itself, a denial
)

func (k NetFailure) String() string {
	switch k {
	case NetDenied:
		return "denied"
	case NetUnreachable:
		return "unreachable"
	}
	return "none"
}

// ClassifyNetwork says whether text (a failed command's stderr and stdout)
// shows a network denial, an unreachable network, or neither, and the line
// that shows it (at most 200 bytes).
func ClassifyNetwork(text string) (NetFailure, string) {
	if loc := networkDenial.FindStringIndex(text); loc != nil {
		return NetDenied, lineAround(text, loc[0], 200)
	}
	for _, re := range []*regexp.Regexp{networkUnreachable, networkFailure} {
		if loc := re.FindStringIndex(text); loc != nil {
			return NetUnreachable, lineAround(text, loc[0], 200)
		}
	}
	return NetNone, ""
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

// IndexUnreachable finds a failed step whose output shows the package index
// unreachable (ClassifyNetwork: no upstream, refused, cut) and no step that
// shows a denial: the step's name, the sign, and whether one was found.
func IndexUnreachable(steps []summary.Step) (string, string, bool) {
	name, sign := "", ""
	for _, st := range steps {
		if st.ExitCode == nil || *st.ExitCode == 0 {
			continue
		}
		switch kind, line := ClassifyNetwork(st.Stderr + "\n" + st.Stdout); kind {
		case NetDenied:
			return "", "", false
		case NetUnreachable:
			if name == "" {
				name, sign = st.Name, line
			}
		}
	}
	return name, sign, name != ""
}

// Count is what the bundled server's audit recorded of D1 in the subject's
// sandboxes.
type Count struct {
	Installs int         // commands that ran pip install
	Asks     int         // lookups and connections of a package index host, allowed or denied
	Denied   int         // of those, the ones the egress gateway denied
	Allowed  *wire.Event // the first ask of the index it allowed (nil: none)
}

// CountEvents counts D1's events among events (a run's Saw.Events).
func CountEvents(events []wire.Event) Count {
	var c Count
	for i, ev := range events {
		if ev.Kind == "command" && ev.Command != nil && PipInstall.MatchString(ev.Command.Command) {
			c.Installs++
		}
		if ev.Kind == "egress" && ev.Egress != nil && IsPackageHost(ev.Egress.Host) {
			c.Asks++
			switch ev.Egress.Decision {
			case "deny":
				c.Denied++
			case "allow":
				if c.Allowed == nil {
					c.Allowed = &events[i]
				}
			}
		}
	}
	return c
}
