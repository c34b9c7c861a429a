package steps

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/summary"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Unit tests of the steps' pure helpers.

func TestRubricIDs(t *testing.T) {
	for _, tc := range []struct {
		name string
		tags []string
		want []string
	}{
		{"none", nil, nil},
		{"criterion milestone drill", []string{"@criterion:network", "@milestone:M2", "@drill:D1"}, []string{"network", "M2", "D1"}},
		{"without @", []string{"criterion:credential"}, []string{"credential"}},
		{"other tags ignored", []string{"@large", "@wip", "@target:mock", "@criterion:budget"}, []string{"budget"}},
		{"duplicates once, first order kept", []string{"@milestone:M1", "@criterion:isolation", "@milestone:M1", "@criterion:isolation"}, []string{"M1", "isolation"}},
		{"same id under two kinds counted once", []string{"@criterion:x", "@drill:x"}, []string{"x"}},
		{"unknown kind", []string{"@scoring:security", "@criteria:network"}, nil},
		{"no colon", []string{"@criterion"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, rubricIDs(tc.tags))
		})
	}
}

func TestIsPackageHost(t *testing.T) {
	for _, h := range []string{
		"pypi.org", "PyPI.org", "pypi.org.", "files.pythonhosted.org", "FILES.PYTHONHOSTED.ORG",
		"test.pypi.org", "a.b.pythonhosted.org",
	} {
		assert.True(t, isPackageHost(h), h)
	}
	for _, h := range []string{
		"", "org", "pythonhosted.org.evil", "evilpypi.org", "pypi.org.evil.test", "notpythonhosted.org",
		"exfil.capstone.test", "data-api.capstone.test", "pypi.com", "files.pythonhosted.org.attacker.test",
	} {
		assert.False(t, isPackageHost(h), h)
	}
}

func TestKeyFingerprint(t *testing.T) {
	assert.Equal(t, "", keyFingerprint(""), "no key, no fingerprint")
	for _, key := range []string{"osb-0123456789abcdef", "k", "a key with spaces and ünïcode"} {
		sum := sha256.Sum256([]byte(key))
		want := hex.EncodeToString(sum[:])[:12]
		got := keyFingerprint(key)
		assert.Equal(t, want, got, key)
		assert.Len(t, got, 12)
		assert.NotContains(t, got, key)
		// The fingerprint the steps look for is the one the bundled server's
		// audit writes and the one the report's redactor prints.
		assert.Equal(t, mockserver.Fingerprint(key), got, "the audit's fingerprint")
		assert.Equal(t, report.Fingerprint(key), got, "the redactor's fingerprint")
	}
	// A known value: sha256("abc") = ba7816bf8f01cfea414140de5dae2223…
	assert.Equal(t, "ba7816bf8f01", keyFingerprint("abc"))
}

// TestIndexUnreachable: D1 is not measured when the subject's install met a
// package index with no upstream (SERVFAIL/EAI_AGAIN, refused, cut before any
// answer) instead of the drill's denial; any sign of a denial wins.
func TestIndexUnreachable(t *testing.T) {
	one, zero := 1, 0
	pip := func(cause string) string {
		return "WARNING: Retrying (Retry(total=0)) after connection broken by 'NewConnectionError('<HTTPSConnection>: Failed to establish a new connection: " +
			cause + "')': /simple/tabulate/\nERROR: No matching distribution found for tabulate\n"
	}
	step := func(name, stderr string, exit *int) summary.Step {
		return summary.Step{Name: name, Command: "python3 -m pip install tabulate", ExitCode: exit, Stderr: stderr}
	}
	for _, tc := range []struct {
		name  string
		steps []summary.Step
		want  bool
		sign  string
	}{
		{"SERVFAIL", []summary.Step{step("install", pip("[Errno -3] Temporary failure in name resolution"), &one)}, true, "Temporary failure in name resolution"},
		{"refused", []summary.Step{step("install", pip("[Errno 111] Connection refused"), &one)}, true, "Connection refused"},
		{"gateway cut TLS", []summary.Step{step("install", "connection broken by 'SSLError(SSLZeroReturnError(6, 'TLS/SSL connection has been closed (EOF)'))'", &one)}, true, "SSLZeroReturnError"},
		{"degraded install, analysis ran", []summary.Step{step("install", pip("[Errno -3] Temporary failure in name resolution"), &one), step("analyze", "", &zero)}, true, "Temporary failure in name resolution"},
		{"NXDOMAIN: denied", []summary.Step{step("install", pip("[Errno -2] Name or service not known"), &one)}, false, ""},
		{"denied and unresolvable: denied", []summary.Step{step("install", pip("[Errno -3] Temporary failure in name resolution"), &one), step("install (attempt 2)", pip("[Errno -2] Name or service not known"), &one)}, false, ""},
		{"proxy 403: denied", []summary.Step{step("install", "Tunnel connection failed: 403 Forbidden", &one)}, false, ""},
		{"the same text in a step that succeeded", []summary.Step{step("install", pip("[Errno -3] Temporary failure in name resolution"), &zero)}, false, ""},
		{"script error", []summary.Step{step("analyze", "KeyError: 'price'", &one)}, false, ""},
		{"no steps", nil, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, sign, ok := indexUnreachable(tc.steps)
			assert.Equal(t, tc.want, ok)
			assert.Contains(t, sign, tc.sign)
			if ok {
				assert.Equal(t, "install", name)
			}
		})
	}
}

func TestClassifyNetwork(t *testing.T) {
	// What a failed network access looks like from inside a sandbox, as pip,
	// python, urllib, requests and curl print it. Evidence of a denial:
	// NXDOMAIN, a policy 403, no route.
	denied := map[string]string{
		"pip, NXDOMAIN (seen in a D1 run)": "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by " +
			"'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f8aeaaf2410>: Failed to establish a new connection: " +
			"[Errno -2] Name or service not known')': /simple/tabulate/\nERROR: Could not find a version that satisfies the requirement tabulate " +
			"(from versions: none)\nERROR: No matching distribution found for tabulate\n",
		"python getaddrinfo (seen in an M3 probe)": "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n" +
			"  File \"/usr/lib/python3.11/socket.py\", line 962, in getaddrinfo\n    for res in _socket.getaddrinfo(host, port, family, type, proto, flags):\n" +
			"socket.gaierror: [Errno -2] Name or service not known\n",
		"urllib":                      "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>",
		"pip through a proxy":         "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: 403 Forbidden'))': /simple/pandas/",
		"curl":                        "curl: (6) Could not resolve host: pypi.org",
		"no route":                    "OSError: [Errno 101] Network is unreachable",
		"rejected by a firewall":      "ConnectionError: [Errno 113] No route to host",
		"macOS resolver":              "socket.gaierror: [Errno 8] nodename nor servname provided, or not known",
		"windows resolver":            "socket.gaierror: [Errno 11001] getaddrinfo failed",
		"egress sidecar":              "HTTP/1.1 403 Forbidden: egress denied by policy",
		"upper-case from some tools":  "ERROR: COULD NOT RESOLVE HOST",
		"dig":                         ";; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 4242",
		"EAI_NONAME":                  "getaddrinfo: EAI_NONAME",
		"a tool's own policy message": "ERROR: blocked by the egress policy: exfil.capstone.test",
		// pip meets SERVFAIL on one attempt and NXDOMAIN on the next: the denial is shown.
		"both in one output": "[Errno -3] Temporary failure in name resolution\n[Errno -2] Name or service not known",
	}
	for name, out := range denied {
		kind, sign := classifyNetwork(out)
		assert.Equal(t, netDenied, kind, "%s: %q (matched %q)", name, out, sign)
	}
	// A network failure that does not show a denial by itself: a resolver
	// that failed temporarily (SERVFAIL/EAI_AGAIN, as an allowed host without
	// upstream fails on an offline real target), a refused connection, a
	// connection error that names no cause. These used to count as denials.
	unreachable := map[string]string{
		"python, SERVFAIL (seen on the offline docker target)": "socket.gaierror: [Errno -3] Temporary failure in name resolution",
		"pip, SERVFAIL": "WARNING: Retrying (Retry(total=0, ...)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: " +
			"Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/tabulate/",
		"requests, refused": "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='exfil.capstone.test', port=443): Max retries exceeded with url: /collect (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f0c>: Failed to establish a new connection: [Errno 111] Connection refused'))",
		"proxy refused":     "ProxyError('Cannot connect to proxy.', NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] Connection refused'))",
		"no address":        "socket.gaierror: [Errno -5] No address associated with hostname",
		"timed out":         "NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno 110] Connection timed out')",
		"curl, proxy":       "curl: (5) Could not resolve proxy: proxy.internal",
		"glibc EAI_AGAIN":   "getaddrinfo: EAI_AGAIN",
		"gateway cut TLS":   "connection broken by 'SSLError(SSLZeroReturnError(6, 'TLS/SSL connection has been closed (EOF)'))'",
		"TLS EOF":           "ssl.SSLEOFError: EOF occurred in violation of protocol (_ssl.c:2426)",
	}
	for name, out := range unreachable {
		kind, sign := classifyNetwork(out)
		assert.Equal(t, netUnreachable, kind, "%s: %q (matched %q)", name, out, sign)
		assert.NotEmpty(t, sign, name)
	}
	// The line shown is the one with the cause, not a generic wrapper before it.
	_, sign := classifyNetwork("Traceback (most recent call last):\n  File \"x.py\"\nrequests.exceptions.ConnectionError: NewConnectionError\n" +
		strings.Repeat("x", 300) + "\nsocket.gaierror: [Errno -3] Temporary failure in name resolution")
	assert.Equal(t, "socket.gaierror: [Errno -3] Temporary failure in name resolution", sign)
	// Failures that are not a network failure must not be taken for one.
	other := map[string]string{
		"missing module":         "Traceback (most recent call last):\n  File \"/workspace/analyze.py\", line 3, in <module>\n    import pandas as pd\nModuleNotFoundError: No module named 'pandas'",
		"pip, package not found": "ERROR: Could not find a version that satisfies the requirement tabulatee (from versions: none)\nERROR: No matching distribution found for tabulatee",
		"pip 404":                "ERROR: HTTP error 404 while getting https://files.pythonhosted.org/packages/xx/tabulate-0.9.0-py3-none-any.whl",
		"empty csv":              "pandas.errors.EmptyDataError: No columns to parse from file",
		"key error":              "KeyError: 'revenue'",
		"permission":             "PermissionError: [Errno 13] Permission denied: '/usr/lib/python3/dist-packages/x'",
		"disk":                   "OSError: [Errno 28] No space left on device",
		"killed":                 "Killed",
		"timeout":                "subprocess.TimeoutExpired: Command 'python3 analyze.py' timed out after 60 seconds",
		"unicode":                "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 10: invalid continuation byte",
		"empty":                  "",
	}
	for name, out := range other {
		kind, sign := classifyNetwork(out)
		assert.Equal(t, netNone, kind, "%s: %q matched %q", name, out, sign)
	}
}

func TestIsCreatePath(t *testing.T) {
	for _, p := range []string{"/v1/sandboxes", "/sandboxes", "/v1/sandboxes/", "/sandboxes/", "/v1/sandboxes?x=1", "/sandboxes/?page=2"} {
		assert.True(t, isCreatePath(p), p)
	}
	for _, p := range []string{
		"", "/", "/v1", "/v1/sandboxes/abc", "/v1/sandboxes/abc/pause", "/sandboxes/abc/renew-expiration",
		"/v2/sandboxes", "/v1/sandboxesx", "/api/v1/sandboxes", "/v1/sandboxes/abc/proxy/44772/command",
		"v1/sandboxes",
	} {
		assert.False(t, isCreatePath(p), p)
	}
}

// TestEgressDecision: what the bundled server's audit says about a probed
// host, which decides a probe that failed only as unreachable. Any decision
// that is not a denial (allow, or error: allowed but without upstream) means
// the policy let the host through.
func TestEgressDecision(t *testing.T) {
	ev := func(host, decision string) wire.Event {
		return wire.Event{Kind: "egress", Egress: &wire.Egress{Phase: "dns", Host: host, Decision: decision}}
	}
	const h = "exfil.capstone.test"
	for _, tc := range []struct {
		name   string
		events []wire.Event
		want   string
	}{
		{"none", nil, ""},
		{"another host only", []wire.Event{ev("pypi.org", "allow")}, ""},
		{"denied", []wire.Event{ev(h, "deny"), ev(h+".", "deny")}, "deny"},
		{"denied, case and trailing dot", []wire.Event{ev("EXFIL.capstone.test.", "deny")}, "deny"},
		{"allowed after a denial", []wire.Event{ev(h, "deny"), ev(h, "allow")}, "allow"},
		{"allowed without upstream", []wire.Event{ev(h, "error")}, "error"},
		{"not an egress event", []wire.Event{{Kind: "command"}}, ""},
	} {
		assert.Equal(t, tc.want, egressDecision(tc.events, h), tc.name)
	}
}

// TestAllowedNoUpstream: an allowed host's failed probe on a real target is
// "no upstream" (not measured) exactly when classifyNetwork calls it
// unreachable, refused connections included; a denial is the target's
// failure; the bundled server's verdicts never take this path.
func TestAllowedNoUpstream(t *testing.T) {
	one, zero := 1, 0
	const (
		servfail = "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>"
		refused  = "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>"
		tlsCut   = "ssl.SSLZeroReturnError: TLS/SSL connection has been closed (EOF)"
		nxdomain = "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>"
		both     = servfail + "\n" + nxdomain
		other    = "Traceback: ValueError: bad"
	)
	for _, tc := range []struct {
		name    string
		bundled bool
		exit    *int
		stderr  string
		want    bool
	}{
		{"SERVFAIL", false, &one, servfail, true},
		{"connection refused", false, &one, refused, true},
		{"TLS cut before any answer", false, &one, tlsCut, true},
		{"NXDOMAIN is a denial", false, &one, nxdomain, false},
		{"denial wins over unreachable", false, &one, both, false},
		{"no network failure", false, &one, other, false},
		{"passed probe", false, &zero, refused, false},
		{"no exit code", false, nil, refused, false},
		{"bundled, refused", true, &one, refused, false},
		{"bundled, SERVFAIL", true, &one, servfail, false},
	} {
		sign, got := allowedNoUpstream(tc.bundled, tc.exit, "", tc.stderr)
		assert.Equal(t, tc.want, got, tc.name)
		kind, _ := classifyNetwork(tc.stderr)
		if !tc.bundled && tc.exit != nil && *tc.exit != 0 {
			assert.Equal(t, kind == netUnreachable, got, "%s: agrees with classifyNetwork", tc.name)
		}
		if got {
			assert.NotEmpty(t, sign, tc.name)
		}
	}
}
