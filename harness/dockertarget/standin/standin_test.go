package standin

import (
	"net/http"
	"net/http/httptest"
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
