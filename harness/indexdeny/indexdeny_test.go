package indexdeny

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/summary"
	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAllowedLookups reads the hosts an egress sidecar's log shows allowed
// after the deny: lines "<engine timestamp> <JSON>", egress.outbound events
// without error only.
func TestAllowedLookups(t *testing.T) {
	since := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	log := `2026-12-01T18:59:59.000000000Z {"level":"info","opensandbox.event":"egress.outbound","target.host":"pypi.org","target.ips":["1.2.3.4"]}
2026-12-01T19:00:01.000000000Z {"level":"info","opensandbox.event":"egress.outbound","target.host":"files.pythonhosted.org","target.ips":["1.2.3.5"]}
2026-12-01T19:00:02.000000000Z {"level":"info","opensandbox.event":"egress.outbound","target.host":"data-api.capstone.test","error":"read udp: i/o timeout"}
2026-12-01T19:00:03.000000000Z {"level":"info","opensandbox.event":"egress.updated","target.host":"pypi.org"}
2026-12-01T19:00:04.000000000Z policy server listening on :18080
garbage {"opensandbox.event":"egress.outbound","target.host":"unknown.time"}
`
	got := AllowedLookups(log, since)
	want := []string{"files.pythonhosted.org", "unknown.time"}
	if !slices.Equal(got, want) {
		t.Errorf("AllowedLookups = %v, want %v", got, want)
	}
}

// TestD1RealTargetPreconditions: on a real target D1's checks run only when
// the deny through the sidecar's policy API took effect before the
// subject's first install command (seen by the recording proxy) and the
// install needed the index; otherwise the drill is not measured, saying why.
func TestD1RealTargetPreconditions(t *testing.T) {
	start := time.Now().Add(-time.Minute)
	exit1, exit0 := 1, 0
	install := "python3 -m pip install -q --index-url https://pypi.org/simple tabulate"
	mk := func(deny *Deny, installAt time.Duration, installExit *int) Run {
		return Run{Deny: deny, Started: start, ExitCode: 1, Duration: 20 * time.Second, Target: "real",
			Calls: []command.Call{
				{Time: start.Add(time.Second), Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "sb-1"},
				{Time: start.Add(installAt), Kind: observe.KindEndpoint, Method: "POST", Path: "/sandboxes/sb-1/proxy/44772/command", Status: 200, SandboxID: "sb-1", Port: 44772, Command: install},
			},
			Summary: &summary.Summary{Steps: []summary.Step{{Name: "install", Command: install, ExitCode: installExit}}}}
	}
	reached := func(r Run) error {
		installs, err := r.Precondition()
		if err != nil {
			return err
		}
		_, err = r.ReachedForIndex(installs)
		return err
	}
	applied := &Deny{SandboxID: "sb-1", Requested: start.Add(2 * time.Second), Applied: start.Add(2100 * time.Millisecond), Patch: "PATCH /policy → 200"}
	notMeasuredAs := func(err error, cat rubric.Category, reason string) {
		t.Helper()
		var nm *command.NotMeasured
		require.True(t, errors.As(err, &nm), "not measured: %v", err)
		assert.Equal(t, string(cat), nm.Category)
		assert.Contains(t, nm.Reason, reason)
	}

	assert.NoError(t, reached(mk(applied, 5*time.Second, &exit1)), "deny before the install, the install failed: measured")
	notMeasuredAs(reached(mk(applied, 1500*time.Millisecond, &exit1)), rubric.CategoryPreconditionUnmet, "before the deny took effect")
	notMeasuredAs(reached(mk(applied, 5*time.Second, &exit0)), rubric.CategoryUnsupportedByTarget, "succeeded without the package index")
	notMeasuredAs(reached(mk(&Deny{SandboxID: "sb-1", Absent: true, Why: "the egress sidecar of sandbox sb-1 has no runtime policy API: PATCH /policy answered 404 (not found)"}, 5*time.Second, &exit1)),
		rubric.CategoryUnsupportedByTarget, "has no runtime policy API")
	notMeasuredAs(reached(mk(nil, 5*time.Second, &exit1)), rubric.CategoryPreconditionUnmet, "no create of the subject was seen")
	assert.True(t, command.IsHarnessFault(reached(mk(&Deny{SandboxID: "sb-1", Why: "PATCH /policy got no answer"}, 5*time.Second, &exit1))),
		"a deny the harness could not send is its own fault")

	// Three install commands after the deny: at most 3 passes, at most 2 fails.
	r := mk(applied, 5*time.Second, &exit1)
	r.Calls = append(r.Calls, r.Calls[1], r.Calls[1])
	r.Calls[2].Time, r.Calls[3].Time = start.Add(6*time.Second), start.Add(7*time.Second)
	installs, err := r.Precondition()
	require.NoError(t, err)
	_, err = r.InstallAttempts(installs, 3)
	assert.NoError(t, err)
	note, err := r.InstallAttempts(installs, 2)
	assert.Error(t, err)
	assert.Contains(t, note, "install attempts 3")
}

func TestDeniedLookupsFromASidecarLog(t *testing.T) {
	log := `2026-12-01T22:12:50.358Z {"level":"info","msg":"egress policy loaded","opensandbox.event":"egress.loaded"}
2026-12-01T22:12:51.000Z {"level":"warn","ts":"2026-12-01T22:12:51Z","logger":"opensandbox.egress","msg":"[dns] denied by policy (remote=10.213.47.3 question=\"exfil.capstone.test\")","sandbox_id":"s1"}
2026-12-01T22:12:52.000Z {"level":"warn","msg":"[dns] denied query (remote=10.213.47.3 question=\"x.test\" reason=unknown source)"}
2026-12-01T22:12:53.000Z not json: denied by policy question="fake.test"`
	got := DeniedLookups(log)
	if len(got) != 1 || got[0].Host != "exfil.capstone.test" || !strings.Contains(got[0].Line, "remote=10.213.47.3") {
		t.Errorf("denials: %+v", got)
	}
	if d := DeniedLookups(""); d != nil {
		t.Errorf("empty log: %+v", d)
	}
}

func TestIsPackageHost(t *testing.T) {
	for _, h := range []string{
		"pypi.org", "PyPI.org", "pypi.org.", "files.pythonhosted.org", "FILES.PYTHONHOSTED.ORG",
		"test.pypi.org", "a.b.pythonhosted.org",
	} {
		assert.True(t, IsPackageHost(h), h)
	}
	for _, h := range []string{
		"", "org", "pythonhosted.org.evil", "evilpypi.org", "pypi.org.evil.test", "notpythonhosted.org",
		"exfil.capstone.test", "data-api.capstone.test", "pypi.com", "files.pythonhosted.org.attacker.test",
	} {
		assert.False(t, IsPackageHost(h), h)
	}
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
			name, sign, ok := IndexUnreachable(tc.steps)
			assert.Equal(t, tc.want, ok)
			assert.Contains(t, sign, tc.sign)
			if ok {
				assert.Equal(t, "install", name)
			}
		})
	}
}

func TestClassifyNetwork(t *testing.T) {
	for _, group := range []struct {
		want NetFailure
		outs map[string]string // what a command printed, by the case's name
	}{{
		// What a failed network access looks like from inside a sandbox, as pip,
		// python, urllib, requests and curl print it. Evidence of a denial:
		// NXDOMAIN, a policy 403, no route.
		want: NetDenied,
		outs: map[string]string{
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
		},
	}, {
		// A network failure that does not show a denial by itself: a resolver
		// that failed temporarily (SERVFAIL/EAI_AGAIN, as an allowed host without
		// upstream fails on an offline real target), a refused connection, a
		// connection error that names no cause. These used to count as denials.
		want: NetUnreachable,
		outs: map[string]string{
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
		},
	}, {
		// Failures that are not a network failure must not be taken for one.
		want: NetNone,
		outs: map[string]string{
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
		},
	}} {
		for name, out := range group.outs {
			kind, sign := ClassifyNetwork(out)
			assert.Equal(t, group.want, kind, "%s: %q (matched %q)", name, out, sign)
			if group.want != NetNone {
				assert.NotEmpty(t, sign, name)
			}
		}
	}
}

func TestClassifyNetworkShowsTheCause(t *testing.T) {
	// The line shown is the one with the cause, not a generic wrapper before it.
	_, sign := ClassifyNetwork("Traceback (most recent call last):\n  File \"x.py\"\nrequests.exceptions.ConnectionError: NewConnectionError\n" +
		strings.Repeat("x", 300) + "\nsocket.gaierror: [Errno -3] Temporary failure in name resolution")
	assert.Equal(t, "socket.gaierror: [Errno -3] Temporary failure in name resolution", sign)
}

// CountEvents counts pip installs, every ask of a package index host, the
// gateway's denials of them, and names the first one it allowed.
func TestCountEvents(t *testing.T) {
	events := []wire.Event{
		{Kind: "command", Command: &wire.Command{Command: "python3 -m pip install tabulate"}},
		{Kind: "command", Command: &wire.Command{Command: "python3 analyze.py"}},
		{Kind: "egress", Egress: &wire.Egress{Host: "pypi.org", Decision: "deny"}},
		{Kind: "egress", Egress: &wire.Egress{Host: "files.pythonhosted.org", Decision: "allow", Phase: "connect"}},
		{Kind: "egress", Egress: &wire.Egress{Host: "data-api.capstone.test", Decision: "allow"}},
	}
	c := CountEvents(events)
	assert.Equal(t, 1, c.Installs)
	assert.Equal(t, 2, c.Asks)
	assert.Equal(t, 1, c.Denied)
	require.NotNil(t, c.Allowed)
	assert.Equal(t, "files.pythonhosted.org", c.Allowed.Egress.Host)
	assert.Nil(t, CountEvents(events[:3]).Allowed)
}
