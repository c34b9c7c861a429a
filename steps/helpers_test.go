package steps

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/osb-capstone/acceptance/harness/indexdeny"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/report"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
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
	ev := func(host, decision string) osb.AuditEvent {
		return osb.AuditEvent{Kind: "egress", Egress: &osb.AuditEgress{Phase: "dns", Host: host, Decision: decision}}
	}
	const h = "exfil.capstone.test"
	for _, tc := range []struct {
		name   string
		events []osb.AuditEvent
		want   string
	}{
		{"none", nil, ""},
		{"another host only", []osb.AuditEvent{ev("pypi.org", "allow")}, ""},
		{"denied", []osb.AuditEvent{ev(h, "deny"), ev(h+".", "deny")}, "deny"},
		{"denied, case and trailing dot", []osb.AuditEvent{ev("EXFIL.capstone.test.", "deny")}, "deny"},
		{"allowed after a denial", []osb.AuditEvent{ev(h, "deny"), ev(h, "allow")}, "allow"},
		{"allowed without upstream", []osb.AuditEvent{ev(h, "error")}, "error"},
		{"not an egress event", []osb.AuditEvent{{Kind: "command"}}, ""},
	} {
		assert.Equal(t, tc.want, egressDecision(tc.events, h), tc.name)
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
		sign, got := allowedNoUpstream(tc.bundled, tc.exit, "", tc.stderr)
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
