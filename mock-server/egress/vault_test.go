package egress

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	vaultPolicy = `{"defaultAction":"deny","egress":[{"action":"deny","target":"blocked.data.test"},{"action":"allow","target":"api.data.test"},{"action":"allow","target":"*.data.test"},{"action":"allow","target":"pypi.org"}]}`
	realSecret  = "REAL-SECRET-7f3a9c"
	realKey     = "REAL-APIKEY-55e1"
	vaultCreate = `{"credentials":[{"name":"data-token","source":{"type":"inline","value":"` + realSecret + `"}},
		{"name":"key","source":{"value":"` + realKey + `"}}],
		"bindings":[{"name":"data-api","match":{"hosts":["api.data.test"],"schemes":["https","http"],"ports":[443,80],"paths":["/v1/*"]},"auth":{"type":"bearer","credential":"data-token"}},
		{"name":"wild","match":{"hosts":["*.data.test"]},"auth":{"type":"apiKey","name":"x-api-key","credential":"key"}}]}`
)

func TestVaultRoutesAndCodes(t *testing.T) {
	e := newEnv(t, envOpts{policy: vaultPolicy, credentialProxy: true})
	assertTextError(t, e.api(t, "GET", "/credential-vault", ""), 404, "not found")
	assertTextError(t, e.api(t, "DELETE", "/credential-vault", ""), 404, "not found")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"credentials":{"delete":["x"]}}`), 404, "not found")
	assertTextError(t, e.api(t, "GET", "/credential-vault/credentials", ""), 404, "not found")
	assertTextError(t, e.api(t, "GET", "/credential-vault/_active", ""), 403, "private socket")
	assertTextError(t, e.api(t, "POST", "/credential-vault", `{"credentials":[],"bindings":[],"extra":1}`), 400, "unknown field")
	assertTextError(t, e.api(t, "POST", "/credential-vault", vaultCreate, "RemoteAddr", "10.0.0.5:4000"), 426, "TLS or a loopback peer")

	w := e.api(t, "POST", "/credential-vault", vaultCreate)
	require.Equal(t, 201, w.Code, w.Body.String())
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"revision":1,
		"credentials":[{"name":"data-token","sourceType":"inline","revision":1},{"name":"key","sourceType":"inline","revision":1}],
		"bindings":[
		 {"name":"data-api","revision":1,"match":{"schemes":["https","http"],"ports":[443,80],"hosts":["api.data.test"],"methods":["GET","POST","PUT","PATCH","DELETE"],"paths":["/v1/*"]},"auth":{"type":"bearer"}},
		 {"name":"wild","revision":1,"match":{"schemes":["https"],"ports":[443],"hosts":["*.data.test"],"methods":["GET","POST","PUT","PATCH","DELETE"],"paths":["/*"]},"auth":{"type":"apiKey","name":"X-Api-Key"}}]}`, w.Body.String())
	bodies := []string{w.Body.String()}

	assertTextError(t, e.api(t, "POST", "/credential-vault", vaultCreate), 409, "already exists")

	for _, path := range []string{"/credential-vault", "/credential-vault/credentials", "/credential-vault/credentials/data-token",
		"/credential-vault/bindings", "/credential-vault/bindings/wild"} {
		w = e.api(t, "GET", path, "", "RemoteAddr", "10.0.0.5:4000") // reads need no loopback
		require.Equal(t, 200, w.Code, path)
		bodies = append(bodies, w.Body.String())
	}
	assert.JSONEq(t, `{"name":"data-token","sourceType":"inline","revision":1}`, bodies[3])
	assert.JSONEq(t, `{"revision":1,"credentials":[{"name":"data-token","sourceType":"inline","revision":1},{"name":"key","sourceType":"inline","revision":1}]}`, bodies[2])
	assertTextError(t, e.api(t, "GET", "/credential-vault/credentials/nope", ""), 404, "not found")
	assertTextError(t, e.api(t, "GET", "/credential-vault/bindings/nope", ""), 404, "not found")
	assertTextError(t, e.api(t, "POST", "/credential-vault/bindings", "{}"), 405, "method not allowed")

	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"expectedRevision":7,"credentials":{"delete":["key"]}}`), 409, "expectedRevision 7")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"credentials":{"remove":["key"]}}`), 400, "unknown field")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{}`), 400, "no credentials or bindings")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"credentials":{"delete":["data-token"]}}`), 400, "unknown credential")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"credentials":{"add":[{"name":"key","source":{"value":"v"}}]}}`), 400, "already exists")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"credentials":{"replace":[{"name":"ghost","source":{"value":"v"}}]}}`), 400, "does not exist")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"credentials":{"delete":[" "]}}`), 400, "blank or mentioned twice")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"credentials":{"delete":["key"],"add":[{"name":"key","source":{"value":"v"}}]}}`), 400, "mentioned by multiple operations")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"bindings":{"delete":["ghost"]}}`), 400, `binding "ghost" does not exist`)
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"bindings":{"delete":["wild","wild"]}}`), 400, "blank or mentioned twice")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{"bindings":{"delete":["wild"]}}`, "RemoteAddr", "[2001:db8::1]:9"), 426, "loopback")

	w = e.api(t, "PATCH", "/credential-vault", `{"expectedRevision":1,"credentials":{"replace":[{"name":"key","source":{"value":"ROTATED-KEY-1"}}]},"bindings":{"delete":["wild"]}}`)
	require.Equal(t, 200, w.Code, w.Body.String())
	var st vaultState
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
	assert.EqualValues(t, 2, st.Revision)
	require.Len(t, st.Credentials, 2)
	assert.EqualValues(t, 1, st.Credentials[0].Revision)
	assert.EqualValues(t, 2, st.Credentials[1].Revision)
	require.Len(t, st.Bindings, 1)
	bodies = append(bodies, w.Body.String())

	assertTextError(t, e.api(t, "DELETE", "/credential-vault", "", "RemoteAddr", "10.0.0.5:4000"), 426, "loopback")
	w = e.api(t, "DELETE", "/credential-vault", "")
	assert.Equal(t, 204, w.Code)
	assert.Empty(t, w.Body.String())
	assertTextError(t, e.api(t, "GET", "/credential-vault", ""), 404, "not found")
	w = e.api(t, "POST", "/credential-vault", vaultCreate)
	assert.Equal(t, 201, w.Code, "a vault can be created again after delete")

	for _, b := range bodies {
		for _, s := range []string{realSecret, realKey, "ROTATED-KEY-1"} {
			assert.NotContains(t, b, s)
		}
	}
	ops := []string{}
	for _, ev := range e.rec.kind(wire.KindVault) {
		ops = append(ops, ev.Vault.Op)
	}
	assert.Equal(t, []string{"create", "patch", "delete", "create"}, ops)
	assert.NotContains(t, e.rec.json(t), realSecret)
	assert.NotContains(t, e.rec.json(t), "ROTATED-KEY-1")
}

func TestVaultPreconditionWithoutCredentialProxy(t *testing.T) {
	e := newEnv(t, envOpts{policy: vaultPolicy, credentialProxy: false})
	assertTextError(t, e.api(t, "POST", "/credential-vault", vaultCreate), 412, "credentialProxy")
	assertTextError(t, e.api(t, "PATCH", "/credential-vault", `{}`), 412, "credentialProxy")
	assertTextError(t, e.api(t, "GET", "/credential-vault", ""), 404, "not found")
}

func TestVaultValidation(t *testing.T) {
	binding := func(match, auth string) string {
		return `{"credentials":[{"name":"c","source":{"type":"inline","value":"s3cr3t"}}],"bindings":[{"name":"b","match":` + match + `,"auth":` + auth + `}]}`
	}
	bearer := `{"type":"bearer","credential":"c"}`
	cases := []struct {
		name, body, want string
	}{
		{"host not covered by an allow rule", binding(`{"hosts":["other.test"]}`, bearer), "not covered by an explicit allow"},
		{"host allowed but a deny rule comes first", binding(`{"hosts":["blocked.data.test"]}`, bearer), "not covered"},
		{"apex of a wildcard allow", binding(`{"hosts":["data.test"]}`, bearer), "not covered"},
		{"port not intercepted", binding(`{"hosts":["api.data.test"],"ports":[8443]}`, bearer), "port 8443"},
		{"IP host", binding(`{"hosts":["10.0.0.1"]}`, bearer), "IP"},
		{"host with scheme", binding(`{"hosts":["https://api.data.test"]}`, bearer), "bare FQDN"},
		{"missing hosts", binding(`{"ports":[443]}`, bearer), "match.hosts is required"},
		{"bad scheme", binding(`{"hosts":["api.data.test"],"schemes":["ftp"]}`, bearer), "unsupported scheme"},
		{"bad path", binding(`{"hosts":["api.data.test"],"paths":["v1"]}`, bearer), "must start with /"},
		{"reserved header Host", binding(`{"hosts":["api.data.test"]}`, `{"type":"apiKey","name":"Host","credential":"c"}`), "reserved header"},
		{"reserved header X-Forwarded-For", binding(`{"hosts":["api.data.test"]}`, `{"type":"customHeaders","headers":[{"name":"X-Forwarded-For","credential":"c"}]}`), "reserved header"},
		{"reserved header Content-Length", binding(`{"hosts":["api.data.test"]}`, `{"type":"apiKey","name":"content-length","credential":"c"}`), "reserved header"},
		{"invalid header name", binding(`{"hosts":["api.data.test"]}`, `{"type":"apiKey","name":"bad header","credential":"c"}`), "invalid header name"},
		{"unknown auth type", binding(`{"hosts":["api.data.test"]}`, `{"type":"oauth","credential":"c"}`), "unsupported auth type"},
		{"unknown credential", binding(`{"hosts":["api.data.test"]}`, `{"type":"bearer","credential":"nope"}`), "unknown credential"},
		{"empty custom headers", binding(`{"hosts":["api.data.test"]}`, `{"type":"customHeaders","headers":[]}`), "requires headers"},
		{"empty inline value", `{"credentials":[{"name":"c","source":{"type":"inline","value":""}}],"bindings":[]}`, "cannot be empty"},
		{"non-inline source", `{"credentials":[{"name":"c","source":{"type":"env","value":"X"}}],"bindings":[]}`, "unsupported source type"},
		{"duplicate credential", `{"credentials":[{"name":"c","source":{"value":"a"}},{"name":"c","source":{"value":"b"}}],"bindings":[]}`, "duplicate credential"},
		{"ambiguous exact bindings", `{"credentials":[{"name":"c","source":{"value":"a"}}],"bindings":[
			{"name":"one","match":{"hosts":["api.data.test"]},"auth":{"type":"bearer","credential":"c"}},
			{"name":"two","match":{"hosts":["api.data.test"],"paths":["/v1/x"]},"auth":{"type":"bearer","credential":"c"}}]}`, "ambiguous"},
		{"ambiguous nested wildcards", `{"credentials":[{"name":"c","source":{"value":"a"}}],"bindings":[
			{"name":"one","match":{"hosts":["*.data.test"]},"auth":{"type":"bearer","credential":"c"}},
			{"name":"two","match":{"hosts":["*.x.data.test"]},"auth":{"type":"bearer","credential":"c"}}]}`, "ambiguous"},
		{"malformed JSON", `{"credentials":`, "invalid request body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{policy: vaultPolicy, credentialProxy: true})
			w := e.api(t, "POST", "/credential-vault", tc.body)
			assertTextError(t, w, 400, tc.want)
			assert.NotContains(t, w.Body.String(), "s3cr3t")
		})
	}
	t.Run("bindings need explicit rules", func(t *testing.T) {
		e := newEnv(t, envOpts{policy: `{"defaultAction":"allow"}`, credentialProxy: true})
		assertTextError(t, e.api(t, "POST", "/credential-vault", binding(`{"hosts":["api.data.test"]}`, bearer)), 400, "explicit networkPolicy.egress allow rules")
	})
	t.Run("exact and wildcard are not ambiguous; disjoint methods are not ambiguous", func(t *testing.T) {
		e := newEnv(t, envOpts{policy: vaultPolicy, credentialProxy: true})
		w := e.api(t, "POST", "/credential-vault", `{"credentials":[{"name":"c","source":{"value":"a"}}],"bindings":[
			{"name":"exact","match":{"hosts":["api.data.test"],"methods":["GET"]},"auth":{"type":"bearer","credential":"c"}},
			{"name":"exact-post","match":{"hosts":["api.data.test"],"methods":["post"]},"auth":{"type":"basic","credential":"c"}},
			{"name":"wild","match":{"hosts":["*.data.test"]},"auth":{"type":"customHeaders","headers":[{"name":"x-token","credential":"c"}]}}]}`)
		assert.Equal(t, 201, w.Code, w.Body.String())
	})
}

func TestVaultInjectionAndRedaction(t *testing.T) {
	e := newEnv(t, envOpts{policy: vaultPolicy, credentialProxy: true, stubs: []string{"api.data.test", "files.data.test"}})
	require.Equal(t, 201, e.api(t, "POST", "/credential-vault", vaultCreate).Code)
	api, files := e.stubs["api.data.test"], e.stubs["files.data.test"]

	get := func(c *http.Client, url, fakeAuth string) *http.Response {
		req, err := http.NewRequest("GET", url, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+fakeAuth)
		req.Header.Set("X-Api-Key", "fake-key")
		resp, err := c.Do(req)
		require.NoError(t, err)
		return resp
	}

	// HTTPS through the transparent relay: the sandbox holds only a fake.
	resp := get(e.relayClient(), "https://api.data.test/v1/rows?limit=5", "fake-token")
	body := readAll(t, resp)
	require.Equal(t, 200, resp.StatusCode, body)
	assert.Equal(t, "Bearer "+realSecret, api.last().Header.Get("Authorization"), "upstream receives the real secret")
	assert.Equal(t, "Bearer [REDACTED]", resp.Header.Get("X-Echo-Authorization"), "secret redacted in response headers")
	assert.NotContains(t, body, realSecret)

	// Plain HTTP through the proxy: the binding covers http/80 too.
	resp = get(e.proxyClient(), "http://api.data.test/v1/x", "fake-token")
	readAll(t, resp)
	assert.Equal(t, "Bearer "+realSecret, api.last().Header.Get("Authorization"))
	assert.Equal(t, "Bearer [REDACTED]", resp.Header.Get("X-Echo-Authorization"))

	// Outside the exact binding's paths: the wildcard binding applies instead,
	// and the fake bearer passes through untouched.
	resp = get(e.relayClient(), "https://api.data.test/other", "fake-token")
	readAll(t, resp)
	assert.Equal(t, "Bearer fake-token", api.last().Header.Get("Authorization"))
	assert.Equal(t, realKey, api.last().Header.Get("X-Api-Key"))

	// Wildcard apiKey binding replaces the header (https only, by default).
	resp = get(e.relayClient(), "https://files.data.test/f.csv", "fake-token")
	readAll(t, resp)
	assert.Equal(t, realKey, files.last().Header.Get("X-Api-Key"))
	assert.Equal(t, "[REDACTED]", resp.Header.Get("X-Echo-Api-Key"))
	resp = get(e.relayClient(), "http://files.data.test/f.csv", "fake-token")
	readAll(t, resp)
	assert.Equal(t, "fake-key", files.last().Header.Get("X-Api-Key"), "scheme http is not in the binding")

	var injects []wire.Vault
	for _, ev := range e.rec.kind(wire.KindVault) {
		if ev.Vault.Op == "inject" {
			injects = append(injects, *ev.Vault)
		}
	}
	require.Len(t, injects, 4)
	assert.Equal(t, wire.Vault{Op: "inject", Revision: 1, Binding: "data-api", Host: "api.data.test"}, injects[0])
	assert.Equal(t, wire.Vault{Op: "inject", Revision: 1, Binding: "wild", Host: "api.data.test"}, injects[2])
	assert.Equal(t, wire.Vault{Op: "inject", Revision: 1, Binding: "wild", Host: "files.data.test"}, injects[3])
	all := e.rec.json(t)
	assert.NotContains(t, all, realSecret)
	assert.NotContains(t, all, realKey)

	// After DELETE nothing is injected.
	require.Equal(t, 204, e.api(t, "DELETE", "/credential-vault", "").Code)
	resp = get(e.relayClient(), "https://api.data.test/v1/rows", "fake-token")
	readAll(t, resp)
	assert.Equal(t, "Bearer fake-token", api.last().Header.Get("Authorization"))
}

func TestVaultRuntimeAmbiguity(t *testing.T) {
	e := newEnv(t, envOpts{policy: vaultPolicy, credentialProxy: true, stubs: []string{"api.data.test"}})
	spec := func(name string) bindingRecord {
		b, err := normalizeBinding(bindingSpec{Name: name, Match: bindingMatch{Hosts: []string{"api.data.test"}}, Auth: bindingAuth{Type: "bearer", Credential: "c"}})
		require.NoError(t, err)
		return bindingRecord{spec: b, revision: 1}
	}
	// Validation prevents this state; build it directly to exercise the gateway's tie rule.
	e.att.mu.Lock()
	e.att.vault = &vault{revision: 1, creds: map[string]credRecord{"c": {name: "c", sourceType: "inline", value: "v", revision: 1}},
		bindings: map[string]bindingRecord{"a": spec("a"), "b": spec("b")}}
	e.att.mu.Unlock()
	resp, err := e.relayClient().Get("https://api.data.test/x")
	require.NoError(t, err)
	body := readAll(t, resp)
	assert.Equal(t, 403, resp.StatusCode)
	assert.Equal(t, "credential binding ambiguous", strings.TrimSpace(body))
	assert.Equal(t, 0, e.stubs["api.data.test"].hits())
}
