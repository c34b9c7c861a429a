package netprobe

import (
	"testing"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/indexdeny"
	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
		assert.Equal(t, tc.want, EgressDecision(tc.events, h), tc.name)
	}
}

// TestAllowedNoUpstream: an allowed host's failed probe on a real target is
// "no upstream" (not measured) exactly when indexdeny.ClassifyNetwork calls it
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
		sign, got := AllowedNoUpstream(tc.bundled, tc.exit, "", tc.stderr)
		assert.Equal(t, tc.want, got, tc.name)
		kind, _ := indexdeny.ClassifyNetwork(tc.stderr)
		if !tc.bundled && tc.exit != nil && *tc.exit != 0 {
			assert.Equal(t, kind == indexdeny.NetUnreachable, got, "%s: agrees with indexdeny.ClassifyNetwork", tc.name)
		}
		if got {
			assert.NotEmpty(t, sign, tc.name)
		}
	}
}

// A denied host's probe: a denial passes, reaching it is a violation, a
// probe that failed for no network reason is the harness's, and an
// unreachable host is judged by the audited decision (bundled) or not
// measured (a real target).
func TestDenied(t *testing.T) {
	one, zero := 1, 0
	never := func() (string, error) { t.Fatal("the audit was asked"); return "", nil }
	note, err := Denied("exfil.test", &one, "socket.gaierror: [Errno -2] Name or service not known", true, "mock", never)
	require.NoError(t, err)
	assert.Contains(t, note, "was denied")
	_, err = Denied("exfil.test", &zero, "", true, "mock", never)
	assert.True(t, command.IsViolation(err), "%v", err)
	_, err = Denied("exfil.test", &one, "SyntaxError: invalid syntax", true, "mock", never)
	assert.True(t, command.IsHarnessFault(err), "%v", err)

	unreachable := "socket.gaierror: [Errno -3] Temporary failure in name resolution"
	_, err = Denied("exfil.test", &one, unreachable, true, "mock", func() (string, error) { return "allow", nil })
	assert.True(t, command.IsViolation(err), "%v", err)
	note, err = Denied("exfil.test", &one, unreachable, true, "mock", func() (string, error) { return "deny", nil })
	require.NoError(t, err)
	assert.Contains(t, note, "the audit shows it denied")
	var nm *command.NotMeasured
	_, err = Denied("exfil.test", &one, unreachable, false, "docker", never)
	require.ErrorAs(t, err, &nm)
	assert.Equal(t, "unsupported_by_target", nm.Category)
}
