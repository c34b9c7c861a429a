package mockserver

import (
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listIDs lists every sandbox the key sees.
func (e *testEnv) listIDs(key string) []string {
	e.t.Helper()
	r := e.call("GET", "/v1/sandboxes?pageSize=200", nil, map[string]string{headerAPIKey: key})
	require.Equal(e.t, http.StatusOK, r.Status, "%s", r.Body)
	var ids []string
	for _, it := range r.JSON(e.t)["items"].([]any) {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	sort.Strings(ids)
	return ids
}

func sorted(ids ...string) []string {
	sort.Strings(ids)
	return ids
}

// Two tenants on one server: each key sees only its tenant's sandboxes, and
// another tenant's sandbox is answered exactly as one that does not exist;
// an untenanted key sees them all.
func TestKeyTenancy(t *testing.T) {
	e := newEnv(t)
	const keyA, keyA2, keyB, plain = "key-of-submission-a", "second-key-of-submission-a", "key-of-submission-b", "key-without-tenant"
	require.Equal(t, http.StatusNoContent, e.admin("POST", "/_mock/api-keys", map[string]any{"key": keyA, "tenant": "submission:1"}).Status)
	require.NoError(t, e.srv.AddAPIKeyTenant(keyA2, "submission:1"))
	require.NoError(t, e.srv.AddAPIKeyTenant(keyB, "submission:2"))
	require.Equal(t, http.StatusNoContent, e.admin("POST", "/_mock/api-keys", map[string]any{"key": plain}).Status)

	withKey := func(k string) map[string]string { return map[string]string{headerAPIKey: k} }
	create := func(k string) string {
		r := e.call("POST", "/v1/sandboxes", validCreate(), withKey(k))
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
		return r.JSON(t)["id"].(string)
	}
	sa, sa2, sb, sh := create(keyA), create(keyA2), create(keyB), create(testKey)

	assert.Equal(t, sorted(sa, sa2), e.listIDs(keyA), "a tenant's keys share its sandboxes")
	assert.Equal(t, sorted(sa, sa2), e.listIDs(keyA2))
	assert.Equal(t, []string{sb}, e.listIDs(keyB))
	all := sorted(sa, sa2, sb, sh)
	assert.Equal(t, all, e.listIDs(testKey), "the server's own key sees every sandbox")
	assert.Equal(t, all, e.listIDs(plain), "a key added without a tenant sees every sandbox")

	// Every lifecycle call of B on A's sandbox answers what it answers for
	// an unknown id, body for body (the id aside).
	const unknown = "0123456789abcdef0123456789abcdef"
	future := e.clock.Now().Add(2 * time.Hour).Format(time.RFC3339)
	calls := []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/sandboxes/%s", nil},
		{"DELETE", "/v1/sandboxes/%s", nil},
		{"POST", "/v1/sandboxes/%s/pause", nil},
		{"POST", "/v1/sandboxes/%s/resume", nil},
		{"POST", "/v1/sandboxes/%s/renew-expiration", map[string]any{"expiresAt": future}},
		{"PATCH", "/v1/sandboxes/%s/metadata", map[string]any{"owner": "b"}},
		{"GET", "/v1/sandboxes/%s/endpoints/8080", nil},
		{"GET", "/v1/sandboxes/%s/diagnostics/logs", nil},
		{"GET", "/v1/sandboxes/%s/proxy/8080/x", nil},
		{"GET", "/sandboxes/%s", nil},
		{"DELETE", "/sandboxes/%s", nil},
	}
	for _, c := range calls {
		other := e.call(c.method, strings.Replace(c.path, "%s", sa, 1), c.body, withKey(keyB))
		none := e.call(c.method, strings.Replace(c.path, "%s", unknown, 1), c.body, withKey(keyB))
		assert.Equal(t, http.StatusNotFound, other.Status, "%s %s: %s", c.method, c.path, other.Body)
		assert.Equal(t, none.Status, other.Status, "%s %s", c.method, c.path)
		assert.Equal(t, string(none.Body), strings.ReplaceAll(string(other.Body), sa, unknown), "%s %s", c.method, c.path)
	}
	// A tenanted key does not see the untenanted (harness's) sandboxes either.
	assert.Equal(t, http.StatusNotFound, e.call("DELETE", "/v1/sandboxes/"+sh, nil, withKey(keyA)).Status)

	// Nothing of A's changed: it is alive, running, without B's label.
	r := e.call("GET", "/v1/sandboxes/"+sa, nil, withKey(keyA))
	require.Equal(t, http.StatusOK, r.Status, "A's sandbox survived B's calls: %s", r.Body)
	got := r.JSON(t)
	assert.Equal(t, "Running", got["status"].(map[string]any)["state"])
	md, _ := got["metadata"].(map[string]any)
	_, labelled := md["owner"]
	assert.False(t, labelled, "B's metadata patch did not reach A's sandbox")
	assert.Equal(t, all, e.listIDs(testKey))

	// Each tenant (and the untenanted key) still manages its own.
	assert.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/sandboxes/"+sa2, nil, withKey(keyA)).Status, "another key of the same tenant")
	assert.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/sandboxes/"+sb, nil, withKey(keyB)).Status)
	assert.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/sandboxes/"+sa, nil, withKey(plain)).Status, "an untenanted key reaches every tenant")
	assert.Equal(t, []string{sh}, e.listIDs(testKey))
	assert.Empty(t, e.listIDs(keyA))
}

func TestKeyTenancyBadInput(t *testing.T) {
	e := newEnv(t)
	for _, body := range []any{
		map[string]any{"tenant": "t"},
		map[string]any{"key": "", "tenant": "t"},
		map[string]any{"key": "k1", "tenant": ""},
		map[string]any{"key": "k1", "tenant": " t"},
		map[string]any{"key": "k1", "tenant": "a\nb"},
		map[string]any{"key": "k1", "tenant": strings.Repeat("x", maxTenantLen+1)},
		map[string]any{"key": "k1", "tenants": "t"},
		"not json",
	} {
		r := e.admin("POST", "/_mock/api-keys", body)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%v: %s", body, r.Body)
		assert.Contains(t, string(r.Body), "MOCK::INVALID_PARAMETER")
	}
	assert.Equal(t, http.StatusUnauthorized, e.call("GET", "/v1/sandboxes", nil, map[string]string{headerAPIKey: "k1"}).Status,
		"a refused key was not added")
	require.NoError(t, e.srv.AddAPIKeyTenant("k2", "one"))
	assert.NoError(t, e.srv.AddAPIKeyTenant("k2", "one"), "adding again to the same tenant is harmless")
	assert.Error(t, e.srv.AddAPIKeyTenant("k2", "two"), "a key belongs to one tenant")
	r := e.call("POST", "/_mock/api-keys", map[string]any{"key": "k3"}, map[string]string{headerAdminToken: ""})
	assert.Equal(t, http.StatusUnauthorized, r.Status, "the route needs the admin token")
}
