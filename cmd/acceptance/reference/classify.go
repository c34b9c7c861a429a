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
}

// signature is one recognisable failure pattern.
type signature struct {
	re        *regexp.Regexp
	class     string
	why       string
	retryable bool
}

// Order matters: the first matching signature wins. A policy denial is checked
// before generic connection errors, because pip reports a denied DNS name as
// a NewConnectionError too, and before Traceback, because pip prints one.
var signatures = []signature{
	{regexp.MustCompile(`INPUT_ERROR:`), summary.ClassInputError,
		"the analysis script rejected the input file", false},
	{regexp.MustCompile(`(?i)could not resolve host|name or service not known|temporary failure in name resolution|nodename nor servname|no address associated with hostname|getaddrinfo failed|\[Errno -[235]\]`),
		summary.ClassNetworkPolicy, "the host name did not resolve: default-deny egress answers NXDOMAIN for hosts that are not allowed", false},
	{regexp.MustCompile(`(?i)tunnel connection failed: 403|403 forbidden|proxyerror|egress denied|blocked by (the )?(network|egress) policy`),
		summary.ClassNetworkPolicy, "the egress proxy refused the connection (403)", false},
	{regexp.MustCompile(`(?i)connection refused|network is unreachable|no route to host`),
		summary.ClassNetworkPolicy, "the connection was refused or unroutable: the target is not reachable from the sandbox", false},
	{regexp.MustCompile(`(?i)read timed out|readtimeouterror|connection reset by peer|connection aborted|remote end closed connection|incompleteread|http error 5\d\d|\b50[234]\b.*(server|gateway|unavailable)`),
		summary.ClassPlatformError, "a transient network error talking to the package index", true},
	{regexp.MustCompile(`(?i)connection broken by '(SSLError|ProtocolError|RemoteDisconnected)|SSLZeroReturnError|EOF occurred in violation of protocol|unexpected eof while reading`),
		summary.ClassPlatformError, "the connection to the package index was cut before any answer (TLS EOF/disconnect in the egress layer); the index never answered", false},
	{regexp.MustCompile(`(?i)newconnectionerror|failed to establish a new connection|max retries exceeded`),
		summary.ClassNetworkPolicy, "no connection could be established to the package index", false},
	{regexp.MustCompile(`(?i)no matching distribution found|could not find a version that satisfies`),
		summary.ClassScriptError, "the package index answered but has no such package/version (not a network problem)", false},
	{regexp.MustCompile(`MemoryError|Cannot allocate memory|[Oo]ut of memory`),
		summary.ClassCapacity, "the sandbox ran out of memory", false},
	{regexp.MustCompile(`No space left on device|Disk quota exceeded`),
		summary.ClassCapacity, "the sandbox ran out of disk space", false},
	{regexp.MustCompile(`ModuleNotFoundError|ImportError`),
		summary.ClassScriptError, "a Python module the script needs is missing from the image", false},
	{regexp.MustCompile(`Traceback \(most recent call last\)`),
		summary.ClassScriptError, "the script raised an exception", false},
	{regexp.MustCompile(`(?i)command not found|No such file or directory`),
		summary.ClassScriptError, "a program or file the command needs does not exist", false},
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
			return Classification{Class: s.class, Retryable: s.retryable,
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
