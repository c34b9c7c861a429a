package egress

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPolicyEvaluate(t *testing.T) {
	allowPypi := Policy{DefaultAction: "deny", Egress: []Rule{
		{Action: "allow", Target: "pypi.org"},
		{Action: "allow", Target: "*.pythonhosted.org"},
	}}
	cases := []struct {
		name    string
		policy  Policy
		host    string
		allowed bool
		rule    string
	}{
		{"exact match", allowPypi, "pypi.org", true, "pypi.org"},
		{"exact is case-insensitive", allowPypi, "PyPI.ORG", true, "pypi.org"},
		{"trailing dot ignored", allowPypi, "pypi.org.", true, "pypi.org"},
		{"exact does not match subdomain", allowPypi, "www.pypi.org", false, "default"},
		{"wildcard one level", allowPypi, "files.pythonhosted.org", true, "*.pythonhosted.org"},
		{"wildcard any depth", allowPypi, "a.b.c.pythonhosted.org", true, "*.pythonhosted.org"},
		{"wildcard not apex", allowPypi, "pythonhosted.org", false, "default"},
		{"wildcard not suffix-only", allowPypi, "evilpythonhosted.org", false, "default"},
		{"wildcard case and dot", allowPypi, "FILES.PythonHosted.org.", true, "*.pythonhosted.org"},
		{"no match uses default deny", allowPypi, "exfil.test", false, "default"},
		{"default allow", Policy{DefaultAction: "allow", Egress: []Rule{{Action: "deny", Target: "exfil.test"}}}, "other.test", true, "default"},
		{"deny rule beats default allow", Policy{DefaultAction: "allow", Egress: []Rule{{Action: "deny", Target: "exfil.test"}}}, "exfil.test", false, "exfil.test"},
		{"omitted default is deny", Policy{Egress: []Rule{{Action: "allow", Target: "a.test"}}}, "b.test", false, "default"},
		{"empty policy denies all", Policy{}, "pypi.org", false, "default"},
		{"first match wins: deny before allow", Policy{DefaultAction: "allow", Egress: []Rule{
			{Action: "deny", Target: "*.example.test"}, {Action: "allow", Target: "api.example.test"}}}, "api.example.test", false, "*.example.test"},
		{"first match wins: allow before deny", Policy{Egress: []Rule{
			{Action: "allow", Target: "api.example.test"}, {Action: "deny", Target: "*.example.test"}}}, "api.example.test", true, "api.example.test"},
		{"empty action is deny", Policy{DefaultAction: "allow", Egress: []Rule{{Action: "", Target: "x.test"}}}, "x.test", false, "x.test"},
		{"upper-case actions", Policy{DefaultAction: "DENY", Egress: []Rule{{Action: "ALLOW", Target: "X.Test"}}}, "x.test", true, "x.test"},
		{"IP target", Policy{Egress: []Rule{{Action: "allow", Target: "10.1.2.3"}}}, "10.1.2.3", true, "10.1.2.3"},
		{"CIDR target", Policy{Egress: []Rule{{Action: "allow", Target: "10.0.0.0/8"}}}, "10.9.8.7", true, "10.0.0.0/8"},
		{"CIDR does not match names", Policy{Egress: []Rule{{Action: "allow", Target: "10.0.0.0/8"}}}, "ten.test", false, "default"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.policy.Normalize()
			require.NoError(t, err)
			d := p.Evaluate(tc.host)
			assert.Equal(t, tc.allowed, d.Allowed)
			assert.Equal(t, tc.rule, d.Rule)
			// Evaluate is also correct on the un-normalized policy.
			assert.Equal(t, tc.allowed, tc.policy.Evaluate(tc.host).Allowed)
		})
	}
}

func TestPolicyNormalizeErrors(t *testing.T) {
	cases := map[string]Policy{
		"unknown action":         {Egress: []Rule{{Action: "permit", Target: "a.test"}}},
		"empty target":           {Egress: []Rule{{Action: "allow", Target: " "}}},
		"unknown default action": {DefaultAction: "maybe"},
		"inner wildcard":         {Egress: []Rule{{Action: "allow", Target: "a.*.test"}}},
		"bare wildcard":          {Egress: []Rule{{Action: "allow", Target: "*."}}},
		"url not host":           {Egress: []Rule{{Action: "allow", Target: "https://a.test/x"}}},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := p.Normalize()
			assert.Error(t, err)
		})
	}
}

func TestParsePolicy(t *testing.T) {
	for _, body := range []string{"", "  ", "null", "{}"} {
		p, err := ParsePolicy([]byte(body))
		require.NoError(t, err, body)
		assert.Equal(t, ActionDeny, p.DefaultAction, body)
		assert.False(t, p.Evaluate("pypi.org").Allowed, body)
		assert.Equal(t, ModeDenyAll, p.Mode(), body)
	}
	p, err := ParsePolicy([]byte(`{"egress":[{"action":"ALLOW","target":"PyPI.org."}]}`))
	require.NoError(t, err)
	assert.Equal(t, Policy{DefaultAction: "deny", Egress: []Rule{{Action: "allow", Target: "pypi.org"}}}, p)
	assert.Equal(t, ModeEnforcing, p.Mode())
	_, err = ParsePolicy([]byte(`{"egress":[{"action":"allow"}]}`))
	assert.Error(t, err)
	_, err = ParsePolicy([]byte(`{"egress":`))
	assert.Error(t, err)
	assert.Equal(t, ModeAllowAll, Policy{DefaultAction: "allow"}.Mode())
}
