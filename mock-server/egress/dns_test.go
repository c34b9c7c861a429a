package egress

import (
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// query asks the sidecar's DNS server (never a real resolver).
func query(t *testing.T, addr, netw, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: netw}
	r, _, err := c.Exchange(m, addr)
	require.NoError(t, err)
	return r
}

func TestSidecarDNSAnswersFromGateway(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"}})
	addr := e.sc.DNSAddr()
	cases := []struct {
		name    string
		netw    string
		host    string
		qtype   uint16
		rcode   int
		answers int
	}{
		{"allowed A over udp", "udp", "pypi.org", dns.TypeA, dns.RcodeSuccess, 1},
		{"allowed A over tcp", "tcp", "PYPI.org", dns.TypeA, dns.RcodeSuccess, 1},
		{"allowed AAAA is empty NOERROR", "udp", "pypi.org", dns.TypeAAAA, dns.RcodeSuccess, 0},
		{"wildcard at depth", "udp", "a.b.pythonhosted.org", dns.TypeA, dns.RcodeSuccess, 1},
		{"wildcard apex denied", "udp", "pythonhosted.org", dns.TypeA, dns.RcodeNameError, 0},
		{"denied A is NXDOMAIN", "udp", "exfil.test", dns.TypeA, dns.RcodeNameError, 0},
		{"denied AAAA is NXDOMAIN", "tcp", "exfil.test", dns.TypeAAAA, dns.RcodeNameError, 0},
		{"allowed but unmapped still resolves", "udp", "unmapped.test", dns.TypeA, dns.RcodeSuccess, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := query(t, addr, tc.netw, tc.host, tc.qtype)
			assert.Equal(t, dns.RcodeToString[tc.rcode], dns.RcodeToString[r.Rcode])
			require.Len(t, r.Answer, tc.answers)
			if tc.answers == 1 {
				a, ok := r.Answer[0].(*dns.A)
				require.True(t, ok)
				assert.Equal(t, "127.0.0.1", a.A.String())
			}
		})
	}
	evs := e.rec.egress("exfil.test")
	require.Len(t, evs, 2)
	assert.Equal(t, "dns", evs[0].Phase)
	assert.Equal(t, "deny", evs[0].Decision)
	assert.Equal(t, "qtype=A", evs[0].Reason)
	assert.Equal(t, "qtype=AAAA", evs[1].Reason)

	require.NoError(t, e.hub.SetDenyOverride([]string{"pypi.org"}))
	r := query(t, addr, "udp", "pypi.org", dns.TypeA)
	assert.Equal(t, dns.RcodeNameError, r.Rcode)
	e.hub.ClearDenyOverride()

	// Runtime policy changes apply to the next lookup.
	w := e.api(t, "POST", "/policy", `{}`)
	require.Equal(t, 200, w.Code)
	r = query(t, addr, "udp", "pypi.org", dns.TypeA)
	assert.Equal(t, dns.RcodeNameError, r.Rcode)
}
