package egress

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decodeMap(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m), w.Body.String())
	return m
}

func assertTextError(t *testing.T, w *httptest.ResponseRecorder, code int, contains string) {
	t.Helper()
	assert.Equal(t, code, w.Code, w.Body.String())
	assert.True(t, strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain"), w.Header().Get("Content-Type"))
	assert.Contains(t, w.Body.String(), contains)
}

func TestAPIAuth(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy})
	for _, path := range []string{"/policy", "/credential-vault", "/credential-vault/_active"} {
		for _, tok := range []string{"", "wrong", e.att.Token() + "x", strings.ToUpper(e.att.Token())} {
			req := httptest.NewRequest("GET", path, nil)
			if tok != "" {
				req.Header.Set(AuthHeader, tok)
			}
			w := httptest.NewRecorder()
			e.att.Handler().ServeHTTP(w, req)
			assertTextError(t, w, 401, "unauthorized")
			assert.Equal(t, "unauthorized\n", w.Body.String())
		}
	}
	// healthz needs no auth.
	w := httptest.NewRecorder()
	e.att.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
	assert.Equal(t, 200, w.Code)
	assert.Equal(t, "ok", w.Body.String())
	w = e.api(t, "POST", "/healthz", "")
	assert.Equal(t, 405, w.Code)
	w = e.api(t, "GET", "/nope", "")
	assert.Equal(t, 404, w.Code)
}

func TestAPIPolicyRoutes(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy, maxRules: 5})

	w := e.api(t, "GET", "/policy", "")
	require.Equal(t, 200, w.Code)
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"status":"ok","mode":"enforcing","enforcementMode":"dns+nft","policy":{"defaultAction":"deny","egress":[
		{"action":"allow","target":"pypi.org"},{"action":"allow","target":"*.pythonhosted.org"},{"action":"allow","target":"unmapped.test"}]}}`, w.Body.String())
	assert.True(t, strings.HasSuffix(w.Body.String(), "}\n") && !strings.HasSuffix(w.Body.String(), "\n\n"),
		"the sidecar's JSON ends with one newline, as json.Encoder writes it: %q", w.Body.String())

	// PATCH prepends, replaces same targets (case-insensitive), first entry in the patch wins.
	w = e.api(t, "PATCH", "/policy", `[{"action":"deny","target":"PYPI.org"},{"action":"allow","target":"pypi.org"},{"action":"allow","target":"data.test"}]`)
	require.Equal(t, 200, w.Code, w.Body.String())
	assert.JSONEq(t, `{"status":"ok","mode":"enforcing","enforcementMode":"dns+nft"}`, w.Body.String())
	assert.Equal(t, []Rule{
		{Action: "deny", Target: "pypi.org"}, {Action: "allow", Target: "data.test"},
		{Action: "allow", Target: "*.pythonhosted.org"}, {Action: "allow", Target: "unmapped.test"},
	}, e.att.Policy().Egress)

	// DELETE by targets, case-insensitively; unknown targets ignored.
	w = e.api(t, "DELETE", "/policy", `["Data.Test","nothere.test"]`)
	require.Equal(t, 200, w.Code)
	assert.Len(t, e.att.Policy().Egress, 3)
	w = e.api(t, "DELETE", "/policy", `["nothere.test"]`)
	require.Equal(t, 200, w.Code)
	assert.Equal(t, "no matching targets found", decodeMap(t, w)["reason"])

	// 413 above max rules (5 here), for PATCH and POST.
	w = e.api(t, "PATCH", "/policy", `[{"action":"allow","target":"a.test"},{"action":"allow","target":"b.test"},{"action":"allow","target":"c.test"}]`)
	assertTextError(t, w, 413, "maximum 5")
	w = e.api(t, "POST", "/policy", `{"egress":[{"action":"allow","target":"1.test"},{"action":"allow","target":"2.test"},{"action":"allow","target":"3.test"},{"action":"allow","target":"4.test"},{"action":"allow","target":"5.test"},{"action":"allow","target":"6.test"}]}`)
	assertTextError(t, w, 413, "maximum 5")

	// 400s.
	for _, c := range []struct{ method, body, want string }{
		{"PATCH", ``, "invalid patch body"},
		{"PATCH", `[]`, "at least one rule"},
		{"PATCH", `{"action":"allow"}`, "invalid patch body"},
		{"PATCH", `[{"action":"permit","target":"a.test"}]`, "unknown action"},
		{"PATCH", `[{"action":"allow","target":""}]`, "empty target"},
		{"DELETE", ``, "invalid delete body"},
		{"DELETE", `[]`, "at least one target"},
		{"POST", `{"egress":[{"action":"allow","target":""}]}`, "invalid policy"},
		{"PUT", `{"egress":`, "invalid policy"},
	} {
		w = e.api(t, c.method, "/policy", c.body)
		assertTextError(t, w, 400, c.want)
	}
	big := `[{"action":"allow","target":"` + strings.Repeat("a", 1<<20) + `.test"}]`
	w = e.api(t, "PATCH", "/policy", big)
	assertTextError(t, w, 413, "1 MiB")

	// PUT replaces.
	w = e.api(t, "PUT", "/policy", `{"defaultAction":"allow"}`)
	require.Equal(t, 200, w.Code)
	assert.Equal(t, "allow_all", decodeMap(t, w)["mode"])

	// POST {} / null / empty reset to deny-all with the reason; GET then shows egress null.
	for _, body := range []string{`{}`, `null`, ``} {
		w = e.api(t, "POST", "/policy", body)
		require.Equal(t, 200, w.Code)
		assert.JSONEq(t, `{"status":"ok","mode":"deny_all","reason":"policy reset to default deny-all"}`, w.Body.String())
	}
	w = e.api(t, "GET", "/policy", "")
	assert.JSONEq(t, `{"status":"ok","mode":"deny_all","enforcementMode":"dns+nft","policy":{"defaultAction":"deny","egress":null}}`, w.Body.String())

	w = e.api(t, "HEAD", "/policy", "")
	assert.Equal(t, 405, w.Code)
	assert.Equal(t, "GET, POST, PUT, PATCH, DELETE", w.Header().Get("Allow"))
}

func TestAPIPolicyEmptyEgressIsNotNull(t *testing.T) {
	e := newEnv(t, envOpts{policy: `{"egress":[]}`})
	w := e.api(t, "GET", "/policy", "")
	assert.JSONEq(t, `{"status":"ok","mode":"deny_all","enforcementMode":"dns+nft","policy":{"defaultAction":"deny","egress":[]}}`, w.Body.String())
	// Attach with a Go zero Policy (networkPolicy: {}) reports [] too, as the
	// real server sends {"egress":[]} to the sidecar.
	a2, err := e.hub.Attach("sbx-empty", Policy{}, false)
	require.NoError(t, err)
	defer a2.Close()
	req := httptest.NewRequest("GET", "/policy", nil)
	req.Header.Set(AuthHeader, a2.Token())
	w = httptest.NewRecorder()
	a2.Handler().ServeHTTP(w, req)
	assert.JSONEq(t, `{"status":"ok","mode":"deny_all","enforcementMode":"dns+nft","policy":{"defaultAction":"deny","egress":[]}}`, w.Body.String())
}
