package standin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/osb-capstone/acceptance/mock-server/egress"
)

func TestDNSDecisionDeniedIsNXDOMAINAllowedIsSERVFAIL(t *testing.T) {
	p, err := egress.ParsePolicy([]byte(`{"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"},{"action":"allow","target":"*.capstone.test"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]int{
		"pypi.org.":              dns.RcodeServerFailure, // allowed, but this machine has no upstream
		"data-api.capstone.test": dns.RcodeServerFailure,
		"exfil.example.com.":     dns.RcodeNameError, // denied by default
		"capstone.test.":         dns.RcodeNameError, // *.x never matches x
	}
	for name, want := range cases {
		if got := dnsDecision(p, name); got != want {
			t.Errorf("%s: rcode %s, want %s", name, dns.RcodeToString[got], dns.RcodeToString[want])
		}
	}
}

func TestTokenAuth(t *testing.T) {
	var seen string
	h := tokenAuth("outer", "inner", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Get(authHeader) }))
	for _, tc := range []struct {
		header string
		status int
	}{{"", 401}, {"wrong", 401}, {"outer", 200}} {
		seen = ""
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/policy", nil)
		if tc.header != "" {
			req.Header.Set(authHeader, tc.header)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("header %q: status %d, want %d", tc.header, rec.Code, tc.status)
		}
		if tc.status == 200 && seen != "inner" {
			t.Errorf("inner handler saw token %q, want the attachment's own", seen)
		}
		if tc.status == 401 && rec.Body.String() != "unauthorized\n" {
			t.Errorf("401 body %q", rec.Body.String())
		}
	}
}

// TestPolicyPatchDeniesMidRun: the stand-in's runtime policy API changes
// what its DNS answers at once, as D1 on the docker target needs: PATCH
// /policy prepends deny rules that win over the create's allow rules.
func TestPolicyPatchDeniesMidRun(t *testing.T) {
	att := attach(t, `{"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"},{"action":"allow","target":"files.pythonhosted.org"}]}`, false)
	h := tokenAuth("outer", att.Token(), att.Handler())
	if got := dnsDecision(att.Policy(), "pypi.org."); got != dns.RcodeServerFailure {
		t.Fatalf("before the patch pypi.org got %s, want SERVFAIL (allowed, no upstream)", dns.RcodeToString[got])
	}
	req := httptest.NewRequest("PATCH", "/policy", strings.NewReader(`[{"action":"deny","target":"pypi.org"},{"action":"deny","target":"*.pythonhosted.org"}]`))
	req.Header.Set(authHeader, "outer")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"ok"`) {
		t.Fatalf("PATCH /policy: %d %s", rec.Code, rec.Body.String())
	}
	for _, name := range []string{"pypi.org.", "files.pythonhosted.org."} {
		if got := dnsDecision(att.Policy(), name); got != dns.RcodeNameError {
			t.Errorf("after the patch %s got %s, want NXDOMAIN", name, dns.RcodeToString[got])
		}
	}
	req = httptest.NewRequest("GET", "/policy", nil)
	req.Header.Set(authHeader, "outer")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var st struct {
		Policy struct {
			Egress []struct{ Action, Target string }
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || len(st.Policy.Egress) != 3 {
		t.Fatalf("GET /policy: %d %s (%v)", rec.Code, rec.Body.String(), err)
	}
	// Prepended; the allow of pypi.org replaced (same target); the exact allow
	// of files.pythonhosted.org stays, after the wildcard deny that wins.
	want := []string{"deny pypi.org", "deny *.pythonhosted.org", "allow files.pythonhosted.org"}
	for i, r := range st.Policy.Egress {
		if got := r.Action + " " + r.Target; got != want[i] {
			t.Errorf("rule %d: %q, want %q", i, got, want[i])
		}
	}
}

// TestOutboundLogLine: an allowed lookup is logged as the real sidecar logs
// it (JSON, opensandbox.event egress.outbound, target.host, error).
func TestOutboundLogLine(t *testing.T) {
	var b strings.Builder
	logOutbound(&b, "sb1", "pypi.org", "no upstream")
	var m map[string]any
	if err := json.Unmarshal([]byte(b.String()), &m); err != nil {
		t.Fatalf("%q: %v", b.String(), err)
	}
	if m["opensandbox.event"] != "egress.outbound" || m["target.host"] != "pypi.org" || m["error"] != "no upstream" || m["sandbox_id"] != "sb1" {
		t.Errorf("log line %s", b.String())
	}
}

// attach gives sandbox "sb1" a gateway attachment with the policy (JSON) on a
// hub of its own, closed when the test ends.
func attach(t *testing.T, policy string, credentialProxy bool) *egress.Attachment {
	t.Helper()
	pol, err := egress.ParsePolicy([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	hub, err := egress.NewHub(egress.HubConfig{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	att, err := hub.Attach("sb1", pol, credentialProxy)
	if err != nil {
		t.Fatal(err)
	}
	return att
}
