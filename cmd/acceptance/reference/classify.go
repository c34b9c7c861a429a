package reference

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/osb-capstone/acceptance/harness/summary"
)

// Classification is the verdict on a failed command: which error class it
// belongs to, why (the evidence, quoted from stderr where possible), and
// whether running it again could help.
type Classification struct {
	Class     string
	Reason    string
	Retryable bool
	// Unreachable: the host could not be reached at all and nothing says it
	// was denied (SERVFAIL/EAI_AGAIN, connection refused, the connection cut
	// before any answer): the target has no upstream. The install step goes
	// on without the package (install degraded); a denial never sets it.
	Unreachable bool
}

// signature is one recognisable failure pattern.
type signature struct {
	re          *regexp.Regexp
	class       string
	why         string
	retryable   bool
	unreachable bool
}

// Order matters: the first matching signature wins. A policy denial is checked
// before generic connection errors, because pip reports a denied DNS name as
// a NewConnectionError too, and before Traceback, because pip prints one.
var signatures = []signature{
	{re: regexp.MustCompile(`INPUT_ERROR:`), class: summary.ClassInputError, why: "the analysis script rejected the input file"},
	// A denial (NXDOMAIN, 403, unroutable) is checked before the signs of a
	// target without upstream, so a stderr showing both counts as denied.
	{re: regexp.MustCompile(`(?i)could not resolve host|name or service not known|nodename nor servname|no address associated with hostname|getaddrinfo failed|\[Errno -[25]\]|EAI_NONAME`),
		class: summary.ClassNetworkPolicy, why: "the host name did not resolve: default-deny egress answers NXDOMAIN for hosts that are not allowed"},
	{re: regexp.MustCompile(`(?i)tunnel connection failed: 403|403 forbidden|proxyerror|egress denied|blocked by (the )?(network|egress) policy`),
		class: summary.ClassNetworkPolicy, why: "the egress proxy refused the connection (403)"},
	{re: regexp.MustCompile(`(?i)network is unreachable|no route to host`),
		class: summary.ClassNetworkPolicy, why: "the connection was unroutable: the target is not reachable from the sandbox"},
	// No upstream: the name was allowed (not NXDOMAIN) but nothing answers.
	{re: regexp.MustCompile(`(?i)temporary failure in name resolution|\[Errno -3\]|EAI_AGAIN`),
		class: summary.ClassPlatformError, unreachable: true,
		why: "the package index's name could not be resolved upstream (SERVFAIL/EAI_AGAIN, not a denial's NXDOMAIN): the target has no upstream"},
	{re: regexp.MustCompile(`(?i)connection refused`),
		class: summary.ClassPlatformError, unreachable: true,
		why: "the package index refused the connection (nothing listens there, not a policy denial): the target has no upstream"},
	{re: regexp.MustCompile(`(?i)read timed out|readtimeouterror|connection reset by peer|connection aborted|remote end closed connection|incompleteread|http error 5\d\d|\b50[234]\b.*(server|gateway|unavailable)`),
		class: summary.ClassPlatformError, why: "a transient network error talking to the package index", retryable: true},
	{re: regexp.MustCompile(`(?i)connection broken by '(SSLError|ProtocolError|RemoteDisconnected)|SSLZeroReturnError|EOF occurred in violation of protocol|unexpected eof while reading`),
		class: summary.ClassPlatformError, unreachable: true,
		why: "the connection to the package index was cut before any answer (TLS EOF/disconnect in the egress layer, as a gateway with no upstream does); the index never answered"},
	{re: regexp.MustCompile(`(?i)newconnectionerror|failed to establish a new connection|max retries exceeded`),
		class: summary.ClassNetworkPolicy, why: "no connection could be established to the package index"},
	{re: regexp.MustCompile(`(?i)no matching distribution found|could not find a version that satisfies`),
		class: summary.ClassScriptError, why: "the package index answered but has no such package/version (not a network problem)"},
	{re: regexp.MustCompile(`MemoryError|Cannot allocate memory|[Oo]ut of memory`), class: summary.ClassCapacity, why: "the sandbox ran out of memory"},
	{re: regexp.MustCompile(`No space left on device|Disk quota exceeded`), class: summary.ClassCapacity, why: "the sandbox ran out of disk space"},
	{re: regexp.MustCompile(`ModuleNotFoundError|ImportError`), class: summary.ClassScriptError, why: "a Python module the script needs is missing from the image"},
	{re: regexp.MustCompile(`Traceback \(most recent call last\)`), class: summary.ClassScriptError, why: "the script raised an exception"},
	{re: regexp.MustCompile(`(?i)command not found|No such file or directory`), class: summary.ClassScriptError, why: "a program or file the command needs does not exist"},
}

// Classify decides the class of a finished command from its exit code and
// stderr (plus how long it ran against its timeout). exit == nil means the
// command never reported an exit code. It is only called for failures; an
// exit code of 0 yields an empty Class.
func Classify(exit *int, stderr string, ranFor, timeout float64) Classification {
	if exit != nil && *exit == 0 {
		return Classification{}
	}
	if exit == nil {
		return Classification{Class: summary.ClassPlatformError,
			Reason: "the command ended without an exit code (the stream broke or execd failed to start it)"}
	}
	if *exit == -1 || *exit == 137 || *exit == 143 {
		if timeout > 0 && ranFor >= 0.9*timeout {
			return Classification{Class: summary.ClassTimeout,
				Reason: fmt.Sprintf("killed after %.0fs, at its %.0fs timeout", ranFor, timeout)}
		}
		if c, ok := match(stderr); ok && c.Class == summary.ClassCapacity {
			return c
		}
		return Classification{Class: summary.ClassCapacity,
			Reason: fmt.Sprintf("killed by a signal after %.0fs, before its timeout (exit %d): most likely the memory limit", ranFor, *exit)}
	}
	if c, ok := match(stderr); ok {
		return c
	}
	return Classification{Class: summary.ClassScriptError,
		Reason: fmt.Sprintf("exit code %d with no recognised message on stderr", *exit)}
}

func match(stderr string) (Classification, bool) {
	for _, s := range signatures {
		if loc := s.re.FindStringIndex(stderr); loc != nil {
			return Classification{Class: s.class, Retryable: s.retryable, Unreachable: s.unreachable,
				Reason: s.why + `: "` + evidenceLine(stderr, loc[0]) + `"`}, true
		}
	}
	return Classification{}, false
}

// evidenceLine is the stderr line containing offset i, trimmed to 200 bytes.
func evidenceLine(s string, i int) string {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		end = len(s)
	} else {
		end += i
	}
	// keep at most 200 bytes of the line, starting a little before the match
	if end-start > 200 {
		from := max(start, i-60)
		from = runeCeil(s, from)
		to := runeFloor(s, min(end, from+200))
		prefix, suffix := "", ""
		if from > start {
			prefix = "…"
		}
		if to < end {
			suffix = "…"
		}
		return prefix + strings.TrimSpace(s[from:to]) + suffix
	}
	return strings.TrimSpace(s[start:end])
}
