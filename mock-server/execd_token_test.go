package mockserver

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawExecd sends one request to a sandbox's execd endpoint (addr, no
// scheme) with the headers given; it returns the status, the
// Content-Type and the body.
func rawExecd(t *testing.T, method, url string, body string, hdr map[string]string) (int, string, string) {
	t.Helper()
	var rdr io.Reader
	if body != "" {
		rdr = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rdr)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Content-Type"), string(b)
}

const execd401 = `{"error":"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN"}`

// TestExecdAccessToken: with Config.ExecdAccessToken each sandbox's execd
// answers every request without its own token as upstream execd with
// EXECD_ACCESS_TOKEN answers it (401, its body and content type), /ping and
// /proxy/… included, and nothing of such a request reaches the sandbox or
// the audit's commands; the token is in every endpoint response of that
// sandbox (its headers), differs from sandbox to sandbox, and is never
// passed on to the sandbox (its agent and in-sandbox services).
func TestExecdAccessToken(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ExecdAccessToken = true })
	assert.True(t, e.srv.Info().ExecdAccessToken)
	a, b := e.create(nil), e.create(nil)
	token := func(id string, port int) string {
		r := e.call("GET", "/v1/sandboxes/"+id+"/endpoints/"+itoa(port), nil, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		h, _ := r.JSON(t)["headers"].(map[string]any)
		s, _ := h[headerExecdToken].(string)
		return s
	}
	ta := token(a, execdPort)
	require.Len(t, ta, 32, "24 random bytes, URL-safe base64")
	assert.Equal(t, ta, token(a, 8080), "every port of the sandbox goes through its execd")
	assert.Equal(t, ta, token(a, egressPort))
	assert.NotEqual(t, ta, token(b, execdPort), "each sandbox has its own")

	base := "http://" + e.execdAddr(a)
	wrong := map[string]string{headerExecdToken: token(b, execdPort)}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/ping", ""},
		{"POST", "/command", `{"command":"echo hi"}`},
		{"POST", "/proxy/44772/command", `{"command":"echo hi"}`},
		{"GET", "/proxy/8080/x", ""},
		{"GET", "/proxy/18080/policy", ""},
		{"GET", "/files/download?path=/etc/hostname", ""},
		{"GET", "/no/such/route", ""},
	} {
		for _, hdr := range []map[string]string{nil, wrong, {headerExecdToken: ""}} {
			st, ct, body := rawExecd(t, c.method, base+c.path, c.body, hdr)
			assert.Equal(t, http.StatusUnauthorized, st, "%s %s %v", c.method, c.path, hdr)
			assert.Equal(t, "application/json; charset=utf-8", ct)
			assert.Equal(t, execd401, body)
		}
	}
	_, seen := e.rt.byID(a).lastProxied()
	assert.False(t, seen, "a refused request reached the sandbox")
	assert.Empty(t, e.admin("GET", "/_mock/audit?kind=command&sandbox_id="+a, nil).JSON(t)["events"], "a refused command is no command of the sandbox")

	own := map[string]string{headerExecdToken: ta}
	st, _, _ := rawExecd(t, "GET", base+"/ping", "", own)
	assert.Equal(t, http.StatusOK, st)
	st, _, body := rawExecd(t, "POST", base+"/command", `{"command":"echo hi"}`, own)
	assert.Equal(t, http.StatusOK, st, body)
	assert.Contains(t, body, `"text":"hi"`)
	st, _, _ = rawExecd(t, "POST", base+"/proxy/8080/api", `{}`, own)
	assert.Equal(t, http.StatusOK, st)
	got, ok := e.rt.byID(a).lastProxied()
	require.True(t, ok)
	assert.Empty(t, got.Headers.Values(headerExecdToken), "the token went into the sandbox")
}

// TestServerProxyExecdToken: the server proxy route (no API key needed)
// merges the sandbox's execd token for its owner (a caller with an API key
// the server accepts and that sees the sandbox), as the SDKs' endpoint
// headers would; a keyless caller, or one with a key the server does not
// accept, gets execd's 401 unless it sends the token itself (as 1.1.1's
// own auth headers there, OPENSANDBOX-EGRESS-AUTH). Another tenant's key
// meets an unknown sandbox.
func TestServerProxyExecdToken(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ExecdAccessToken = true })
	require.NoError(t, e.srv.AddAPIKeyTenant("key-a", "a"))
	require.NoError(t, e.srv.AddAPIKeyTenant("key-b", "b"))
	r := e.call("POST", "/v1/sandboxes", validCreate(), map[string]string{headerAPIKey: "key-a"})
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	id := r.JSON(t)["id"].(string)
	r = e.call("GET", "/v1/sandboxes/"+id+"/endpoints/44772?use_server_proxy=true", nil, map[string]string{headerAPIKey: "key-a"})
	require.Equal(t, http.StatusOK, r.Status)
	ep := r.JSON(t)
	tok := ep["headers"].(map[string]any)[headerExecdToken].(string)
	require.NotEmpty(t, tok, "the server-proxy endpoint keeps the direct endpoint's headers")
	assert.Equal(t, e.srv.Domain()+"/sandboxes/"+id+"/proxy/44772", ep["endpoint"])

	for _, v := range []string{"", "/v1"} {
		u := e.srv.URL() + v + "/sandboxes/" + id + "/proxy/44772/command"
		cmd := `{"command":"echo hi"}`
		st, _, body := rawExecd(t, "POST", u, cmd, map[string]string{headerAPIKey: "key-a"})
		assert.Equal(t, http.StatusOK, st, "the owner's key: %s", body)
		got, _ := e.rt.byID(id).lastProxied()
		assert.Empty(t, got.Headers.Values(headerAPIKey), "the API key is stripped")
		st, ct, body := rawExecd(t, "POST", u, cmd, nil)
		assert.Equal(t, http.StatusUnauthorized, st, "keyless")
		assert.Equal(t, "application/json; charset=utf-8", ct)
		assert.Equal(t, execd401, body)
		st, _, _ = rawExecd(t, "POST", u, cmd, map[string]string{headerAPIKey: "not-a-key"})
		assert.Equal(t, http.StatusUnauthorized, st, "a key the server does not accept")
		st, _, _ = rawExecd(t, "GET", e.srv.URL()+v+"/sandboxes/"+id+"/proxy/8080/x", "", nil)
		assert.Equal(t, http.StatusUnauthorized, st, "keyless, another port: through execd too")
		st, _, body = rawExecd(t, "POST", u, cmd, map[string]string{headerExecdToken: tok})
		assert.Equal(t, http.StatusOK, st, "keyless with the token, as the SDKs send it: %s", body)
		st, _, _ = rawExecd(t, "POST", u, cmd, map[string]string{headerAPIKey: "key-b"})
		assert.Equal(t, http.StatusNotFound, st, "another tenant's key")
	}
}

// TestExecdTokenOffByDefault: without Config.ExecdAccessToken nothing
// changes (1.1.1: its server never sets EXECD_ACCESS_TOKEN): no header in
// the endpoints, execd answers without a token; and the bundled server's
// modes turn it on where the sandboxes have no network namespace.
func TestExecdTokenOffByDefault(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	r := e.call("GET", "/v1/sandboxes/"+id+"/endpoints/44772", nil, nil)
	assert.NotContains(t, string(r.Body), "headers")
	st, _, _ := rawExecd(t, "GET", "http://"+e.execdAddr(id)+"/ping", "", nil)
	assert.Equal(t, http.StatusOK, st)
	assert.False(t, e.srv.Info().ExecdAccessToken)

	for _, c := range []struct {
		mode    string
		network bool
		want    bool
	}{{"auto", false, true}, {"auto", true, false}, {"", false, true}, {"on", true, true}, {"off", false, false}} {
		m, ok := ParseExecdTokenMode(c.mode)
		require.True(t, ok)
		assert.Equal(t, c.want, m.enabled(c.network), "%q network=%v", c.mode, c.network)
	}
	_, ok := ParseExecdTokenMode("yes")
	assert.False(t, ok)
}
