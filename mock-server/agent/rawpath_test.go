package agent

import (
	"io"
	"net/http"
	"testing"
)

// TestOddPathsAnswerLikeGin: real execd's gin engine (v1.10.0, gin.New()
// defaults: RedirectTrailingSlash on, RedirectFixedPath, RemoveExtraSlash and
// UseRawPath off) matches the decoded path without cleaning it. Go's mux
// would have answered every dot or double-slash path with a 301.
func TestOddPathsAnswerLikeGin(t *testing.T) {
	_, srv, _ := testAgent(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	const noRoute, routed, redirect = "no route", "routed", "redirect"
	for _, tc := range []struct {
		method, path string
		status       int
		kind         string // noRoute: the unknown-path answer; routed: a handler's; redirect: Location
		location     string
	}{
		{"GET", "//ping", 404, noRoute, ""},
		{"GET", "/./ping", 404, noRoute, ""},
		{"GET", "/files/../ping", 404, noRoute, ""},
		{"GET", "/metrics//watch", 404, noRoute, ""},
		{"GET", "/command/status/..%2f..", 404, noRoute, ""},
		{"GET", "/command/status/a%2Fb", 404, noRoute, ""},
		{"GET", "/ping//", 404, noRoute, ""}, // gin strips one slash, never more
		{"POST", "/ping/", 404, noRoute, ""}, // only a route of the same method redirects
		// "." and ".." are ordinary ids: the handler answers (unknown command).
		{"GET", "/command/status/.", 404, routed, ""},
		{"GET", "/command/status/..", 404, routed, ""},
		{"GET", "/command/../logs", 400, routed, ""},
		// One trailing slash too many: 301 for GET, 307 otherwise, relative Location.
		{"GET", "/ping/", 301, redirect, "/ping"},
		{"GET", "/metrics/", 301, redirect, "/metrics"},
		{"GET", "/command/status/abc/", 301, redirect, "/command/status/abc"},
		{"GET", "/files/info/?path=/x", 301, redirect, "/files/info?path=/x"},
		{"DELETE", "/files/", 307, redirect, "/files"},
		{"POST", "/command/", 307, redirect, "/command"},
		{"POST", "/directories/", 307, redirect, "/directories"},
		// Clean paths still work.
		{"GET", "/ping", 200, routed, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, b)
			}
			switch tc.kind {
			case redirect:
				if got := res.Header.Get("Location"); got != tc.location {
					t.Errorf("Location %q, want %q", got, tc.location)
				}
			case noRoute:
				if string(b) != "404 page not found" {
					t.Errorf("want gin's unknown-path answer, got %s", b)
				}
			case routed:
				if string(b) == "404 page not found" || res.Header.Get("Location") != "" {
					t.Errorf("want a handler's answer, got %s", b)
				}
			}
		})
	}
}
