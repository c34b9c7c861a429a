package mockserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

var (
	uuid4Re = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	tsRe    = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z$`)
)

func TestCreateReturns202Running(t *testing.T) {
	e := newEnv(t)
	for _, prefix := range []string{"/v1", ""} {
		r := e.call("POST", prefix+"/sandboxes", validCreate(), nil)
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
		m := r.JSON(t)
		assert.Regexp(t, uuid4Re, m["id"])
		st := m["status"].(map[string]any)
		assert.Equal(t, "Running", st["state"])
		assert.Equal(t, "CONTAINER_RUNNING", st["reason"])
		assert.Equal(t, "Sandbox container started successfully.", st["message"])
		assert.Equal(t, m["createdAt"], st["lastTransitionAt"])
		assert.Equal(t, "2026-11-29T06:48:55.599805Z", m["createdAt"])
		assert.Equal(t, "2026-11-29T06:58:55.599805Z", m["expiresAt"])
		assert.Equal(t, []any{"tail", "-f", "/dev/null"}, m["entrypoint"])
		for _, absent := range []string{"image", "metadata", "platform"} {
			assert.NotContains(t, m, absent, "null/absent fields must be omitted")
		}
		assert.Empty(t, r.Header.Get("Location"))
	}
	// the runtime got the parsed spec
	sb := e.rt.sandboxes[0]
	assert.Equal(t, int64(500), sb.spec.Limits.CPUMilli)
	assert.Equal(t, int64(512<<20), sb.spec.Limits.MemoryBytes)
	assert.Equal(t, "python", sb.spec.Profile.Name)
}

func TestCreateManualCleanupOmitsExpiresAt(t *testing.T) {
	e := newEnv(t)
	body := validCreate()
	body["timeout"] = nil
	body["env"] = map[string]any{"A": "1", "DROP": nil}
	body["metadata"] = map[string]string{"team": "a"}
	body["platform"] = map[string]string{"os": "linux", "arch": "amd64"}
	r := e.call("POST", "/v1/sandboxes", body, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	m := r.JSON(t)
	assert.NotContains(t, m, "expiresAt")
	assert.Equal(t, map[string]any{"team": "a"}, m["metadata"])
	assert.Equal(t, map[string]string{"A": "1"}, e.rt.sandboxes[0].spec.Env)

	g := e.call("GET", "/v1/sandboxes/"+m["id"].(string), nil, nil)
	require.Equal(t, http.StatusOK, g.Status)
	gm := g.JSON(t)
	assert.NotContains(t, gm, "expiresAt")
	assert.Equal(t, map[string]any{"uri": "python:3.11"}, gm["image"])
	assert.Regexp(t, tsRe, gm["createdAt"])
}

func TestGetDeleteAndGone(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	for _, p := range []string{"/v1", ""} {
		r := e.call("GET", p+"/sandboxes/"+id, nil, nil)
		require.Equal(t, http.StatusOK, r.Status)
		m := r.JSON(t)
		for _, k := range []string{"id", "status", "createdAt", "entrypoint"} {
			assert.Contains(t, m, k)
		}
	}
	d := e.call("DELETE", "/sandboxes/"+id, nil, nil)
	assert.Equal(t, http.StatusNoContent, d.Status)
	assert.Empty(t, d.Body)
	assert.True(t, e.rt.byID(id).isDestroyed())
	g := e.call("GET", "/v1/sandboxes/"+id, nil, nil)
	assert.Equal(t, http.StatusNotFound, g.Status)
	assert.Equal(t, "DOCKER::SANDBOX_NOT_FOUND", g.JSON(t)["code"])
	assert.Equal(t, http.StatusNotFound, e.call("DELETE", "/v1/sandboxes/"+id, nil, nil).Status)
	states := e.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindState})
	require.Len(t, states, 2)
	assert.Equal(t, "created", states[0].State.Reason)
	assert.Equal(t, "deleted by API", states[1].State.Reason)
}

func detailTypes(t *testing.T, r resp) []string {
	var m struct {
		Detail []struct {
			Type string `json:"type"`
			Loc  []any  `json:"loc"`
		} `json:"detail"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &m), "%s", r.Body)
	var out []string
	for _, d := range m.Detail {
		out = append(out, fmt.Sprintf("%s@%v", d.Type, d.Loc))
	}
	return out
}

func TestCreateValidation422(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name string
		mut  func(m map[string]any)
		raw  string
		want string
	}{
		{name: "missing resourceLimits", mut: func(m map[string]any) { delete(m, "resourceLimits") }, want: "missing@[body resourceLimits]"},
		{name: "missing entrypoint", mut: func(m map[string]any) { delete(m, "entrypoint") }, want: "value_error@[body]"},
		{name: "empty entrypoint", mut: func(m map[string]any) { m["entrypoint"] = []string{} }, want: "too_short@[body entrypoint]"},
		{name: "neither image nor snapshot", mut: func(m map[string]any) { delete(m, "image") }, want: "value_error@[body]"},
		{name: "blank image uri", mut: func(m map[string]any) { m["image"] = map[string]string{"uri": "  "} }, want: "value_error@[body]"},
		{name: "both image and snapshot", mut: func(m map[string]any) { m["snapshotId"] = "snap" }, want: "value_error@[body]"},
		{name: "timeout below 60", mut: func(m map[string]any) { m["timeout"] = 10 }, want: "greater_than_equal@[body timeout]"},
		{name: "timeout not int", mut: func(m map[string]any) { m["timeout"] = "soon" }, want: "int_parsing@[body timeout]"},
		{name: "env not strings", mut: func(m map[string]any) { m["env"] = map[string]any{"A": 1} }, want: "string_type@[body env A]"},
		{name: "bad policy action", mut: func(m map[string]any) {
			m["networkPolicy"] = map[string]any{"defaultAction": "maybe"}
		}, want: "enum@[body networkPolicy defaultAction]"},
		{name: "credentialProxy without policy", mut: func(m map[string]any) {
			m["credentialProxy"] = map[string]any{"enabled": true}
		}, want: "value_error@[body]"},
		{name: "bad JSON", raw: `{"image":`, want: "json_invalid@[body 0]"},
		{name: "empty body", raw: ``, want: "missing@[body]"},
		{name: "array body", raw: `[1]`, want: "model_attributes_type@[body]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.mut != nil {
				m := validCreate()
				c.mut(m)
				body = m
			} else {
				body = c.raw
			}
			r := e.call("POST", "/v1/sandboxes", body, nil)
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r.Body)
			assert.Contains(t, detailTypes(t, r), c.want)
			assert.NotContains(t, r.JSON(t), "code")
		})
	}
	assert.Empty(t, e.rt.sandboxes, "no sandbox may be started for an invalid request")
}

// FastAPI parses a body as JSON only without a Content-Type or with a JSON
// one; `curl -d` (form-urlencoded) or text/plain gets 422 from the real
// server, so it does here too, on every route with a JSON body.
func TestNonJSONContentTypeIs422(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	body, err := json.Marshal(validCreate())
	require.NoError(t, err)
	for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain", "text/json", "json", "multipart/form-data; boundary=x"} {
		r := e.call("POST", "/v1/sandboxes", body, map[string]string{"Content-Type": ct})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s: %s", ct, r.Body)
		assert.Equal(t, []string{"model_attributes_type@[body]"}, detailTypes(t, r), ct)
		assert.Equal(t, string(body), r.JSON(t)["detail"].([]any)[0].(map[string]any)["input"], ct)
	}
	r := e.call("PATCH", "/v1/sandboxes/"+id+"/metadata", `{"a":"b"}`, map[string]string{"Content-Type": "text/plain"})
	assert.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r.Body)
	r = e.call("POST", "/v1/sandboxes/"+id+"/renew-expiration", `{"expiresAt":"2999-01-01T00:00:00Z"}`,
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	assert.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r.Body)
	r = e.call("POST", "/v1/sandboxes", "", map[string]string{"Content-Type": "text/plain"})
	assert.Equal(t, []string{"missing@[body]"}, detailTypes(t, r), "an empty body is missing, whatever its type")

	// JSON types and no type at all are parsed (raw requests: the spec
	// validator knows only application/json)
	for _, ct := range []string{"Application/JSON; charset=utf-8", "application/merge-patch+json", "application/vnd.api+json", ""} {
		req, err := http.NewRequest("POST", e.srv.URL()+"/v1/sandboxes", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set(headerAPIKey, testKey)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		res, err := e.client.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusAccepted, res.StatusCode, "Content-Type %q", ct)
	}
}

func TestCreateServiceErrors(t *testing.T) {
	e := newEnv(t, withMaxTimeout(time.Hour))
	cases := []struct {
		name   string
		mut    func(m map[string]any)
		status int
		code   string
	}{
		{"timeout above max", func(m map[string]any) { m["timeout"] = 7200 }, 400, "SANDBOX::INVALID_PARAMETER"},
		{"reserved metadata", func(m map[string]any) { m["metadata"] = map[string]string{"opensandbox.io/x": "y"} }, 400, "SANDBOX::INVALID_METADATA_LABEL"},
		{"bad label value", func(m map[string]any) { m["metadata"] = map[string]string{"k": "has space"} }, 400, "SANDBOX::INVALID_METADATA_LABEL"},
		{"bad label key", func(m map[string]any) { m["metadata"] = map[string]string{"-k": "v"} }, 400, "SANDBOX::INVALID_METADATA_LABEL"},
		{"bad platform", func(m map[string]any) { m["platform"] = map[string]string{"os": "plan9", "arch": "amd64"} }, 400, "SANDBOX::INVALID_PARAMETER"},
		{"windows", func(m map[string]any) { m["platform"] = map[string]string{"os": "windows", "arch": "amd64"} }, 400, "SANDBOX::INVALID_PARAMETER"},
		{"policy without egress", func(m map[string]any) { m["networkPolicy"] = map[string]any{"defaultAction": "deny"} }, 400, "SANDBOX::INVALID_PARAMETER"},
		{"poolRef", func(m map[string]any) { m["extensions"] = map[string]string{"poolRef": "p"} }, 400, "SANDBOX::UNSUPPORTED_POOL_REF"},
		{"renew extension", func(m map[string]any) { m["extensions"] = map[string]string{"access.renew.extend.seconds": "10"} }, 400, "SANDBOX::INVALID_PARAMETER"},
		{"secureAccess", func(m map[string]any) { m["secureAccess"] = true }, 400, "SANDBOX::INVALID_PARAMETER"},
		{"snapshot", func(m map[string]any) { delete(m, "image"); m["snapshotId"] = "snap-1" }, 404, "SNAPSHOT::NOT_FOUND"},
		{"unknown image", func(m map[string]any) { m["image"] = map[string]string{"uri": "ghcr.io/nope/unknown:1"} }, 500, "DOCKER::SANDBOX_IMAGE_PULL_FAILED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := validCreate()
			c.mut(m)
			r := e.call("POST", "/v1/sandboxes", m, nil)
			require.Equal(t, c.status, r.Status, "%s", r.Body)
			assert.Equal(t, c.code, r.JSON(t)["code"])
			assert.NotEmpty(t, r.JSON(t)["message"])
		})
	}
	assert.Empty(t, e.rt.sandboxes)
	r := e.call("POST", "/v1/sandboxes", func() map[string]any {
		m := validCreate()
		m["image"] = map[string]string{"uri": "unknown-image:1"}
		return m
	}(), nil)
	assert.Contains(t, r.JSON(t)["message"], "unknown-image:1")
	// secureAccess: 1.1.1's Docker runtime answers INVALID_PARAMETER with this text.
	m := validCreate()
	m["secureAccess"] = true
	r = e.call("POST", "/v1/sandboxes", m, nil)
	assert.Equal(t, "secureAccess is not supported when runtime.type='docker'. Use the Kubernetes runtime to create secured sandboxes.", r.JSON(t)["message"])
}

func TestCreateRuntimeFailure(t *testing.T) {
	e := newEnv(t)
	e.rt.createErr = errors.New("bwrap exploded")
	r := e.call("POST", "/v1/sandboxes", validCreate(), nil)
	// A runtime failure is a server-side error (not a client mistake): 500 with a code.
	require.Equal(t, http.StatusInternalServerError, r.Status)
	assert.Equal(t, "DOCKER::SANDBOX_START_FAILED", r.JSON(t)["code"])
	assert.Contains(t, r.JSON(t)["message"], "bwrap exploded")
	e.rt.createErr = fmt.Errorf("resolve: %w", runtime.ErrUnknownImage{Image: "x"})
	r = e.call("POST", "/v1/sandboxes", validCreate(), nil)
	assert.Equal(t, "DOCKER::SANDBOX_IMAGE_PULL_FAILED", r.JSON(t)["code"])
}

func TestAuthMatrix(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	missing := `{"code":"MISSING_API_KEY","message":"Authentication credentials are missing. Provide API key via OPEN-SANDBOX-API-KEY header."}`
	invalid := `{"code":"INVALID_API_KEY","message":"Authentication credentials are invalid. Check your API key and try again."}`
	paths := []struct{ method, path string }{
		{"GET", "/v1/sandboxes"}, {"POST", "/v1/sandboxes"}, {"GET", "/sandboxes/" + id}, {"DELETE", "/v1/sandboxes/" + id},
		{"GET", "/v1/sandboxes/" + id + "/endpoints/44772"}, {"GET", "/v1/no/such/route"}, {"GET", "/v1/health"},
		{"GET", "/v1/sandboxes/" + id + "/proxy/abc"}, {"GET", "/v1/sandboxes/" + id + "/proxy/8080/../../x"},
		{"POST", "/v1/metrics/events"}, {"GET", "/v1/pools"},
	}
	for _, p := range paths {
		r := e.call(p.method, p.path, nil, map[string]string{headerAPIKey: ""})
		assert.Equal(t, http.StatusUnauthorized, r.Status, "%s %s", p.method, p.path)
		assert.JSONEq(t, missing, string(r.Body))
		assert.NotEmpty(t, r.Header.Get(headerRequestID))
		r = e.call(p.method, p.path, nil, map[string]string{headerAPIKey: "wrong"})
		assert.Equal(t, http.StatusUnauthorized, r.Status)
		assert.JSONEq(t, invalid, string(r.Body))
	}
	// exempt
	r := e.call("GET", "/health", nil, map[string]string{headerAPIKey: ""})
	assert.Equal(t, http.StatusOK, r.Status)
	assert.JSONEq(t, `{"status":"healthy"}`, string(r.Body))
	r = e.call("GET", "/sandboxes/"+id+"/proxy/8080/x", nil, map[string]string{headerAPIKey: ""})
	assert.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	r = e.call("GET", "/v1/sandboxes/"+id+"/proxy/44772/ping", nil, map[string]string{headerAPIKey: ""})
	assert.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	// with the key, an unknown path is a 404 with a JSON body
	r = e.call("GET", "/v1/no/such/route", nil, nil)
	assert.Equal(t, http.StatusNotFound, r.Status)
	r = e.call("PUT", "/v1/sandboxes", nil, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.Status)
	// the admin token is not an API key and vice versa
	r = e.call("GET", "/v1/sandboxes", nil, map[string]string{headerAPIKey: testAdmin})
	assert.Equal(t, http.StatusUnauthorized, r.Status)
}

func TestNoAuthWhenKeyEmpty(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.APIKey = "" })
	r := e.call("GET", "/v1/sandboxes", nil, map[string]string{headerAPIKey: ""})
	assert.Equal(t, http.StatusOK, r.Status)
}

func TestRequestID(t *testing.T) {
	e := newEnv(t)
	r := e.call("GET", "/v1/sandboxes", nil, map[string]string{headerRequestID: "  my-id-1  "})
	assert.Equal(t, "my-id-1", r.Header.Get(headerRequestID))
	r = e.call("GET", "/v1/sandboxes", nil, nil)
	assert.Regexp(t, hex32, r.Header.Get(headerRequestID))
	r = e.call("GET", "/v1/sandboxes", nil, map[string]string{headerAPIKey: ""})
	assert.Regexp(t, hex32, r.Header.Get(headerRequestID))
	r = e.call("GET", "/v1/sandboxes/none", nil, map[string]string{headerRequestID: "rid-404"})
	assert.Equal(t, "rid-404", r.Header.Get(headerRequestID))
	r = e.call("GET", "/health", nil, nil)
	assert.Regexp(t, hex32, r.Header.Get(headerRequestID))
	// the audit trail carries the request id
	evs := e.srv.AuditQuery(audit.Query{Kind: wire.KindLifecycle})
	found := false
	for _, ev := range evs {
		if ev.Lifecycle.RequestID == "rid-404" {
			found = true
			assert.Equal(t, 404, ev.Lifecycle.Status)
			assert.Equal(t, "none", ev.SandboxID)
		}
	}
	assert.True(t, found)
}

func TestTTLExpiryWithFakeClock(t *testing.T) {
	e := newEnv(t)
	id := e.create(func(m map[string]any) { m["timeout"] = 60 })
	e.clock.Advance(59 * time.Second)
	assert.Equal(t, http.StatusOK, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status)
	e.clock.Advance(2 * time.Second)
	assert.Equal(t, http.StatusNotFound, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status)
	assert.True(t, e.rt.byID(id).isDestroyed())
	states := e.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindState})
	require.NotEmpty(t, states)
	last := states[len(states)-1].State
	assert.Equal(t, "Expired", last.To)
	assert.Equal(t, "ttl expired", last.Reason)
	info := e.srv.Sandboxes()
	require.Len(t, info, 1)
	assert.True(t, info[0].Expired)
	assert.False(t, info[0].Deleted)
}

func TestRenewExpiration(t *testing.T) {
	e := newEnv(t)
	id := e.create(func(m map[string]any) { m["timeout"] = 3600 })
	// shortening is allowed
	newExp := e.clock.Now().Add(120 * time.Second).Truncate(time.Second)
	r := e.call("POST", "/v1/sandboxes/"+id+"/renew-expiration", map[string]string{"expiresAt": newExp.Format(time.RFC3339)}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.JSONEq(t, fmt.Sprintf(`{"expiresAt":%q}`, formatTime(newExp)), string(r.Body))
	g := e.call("GET", "/sandboxes/"+id, nil, nil).JSON(t)
	assert.Equal(t, formatTime(newExp), g["expiresAt"])
	// the old timer (3600 s) must not matter, the new one must
	e.clock.Advance(119 * time.Second)
	assert.Equal(t, http.StatusOK, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status)
	// extend again, then pass the previous deadline
	later := e.clock.Now().Add(time.Hour)
	r = e.call("POST", "/sandboxes/"+id+"/renew-expiration", map[string]string{"expiresAt": later.Format(time.RFC3339Nano)}, nil)
	require.Equal(t, http.StatusOK, r.Status)
	e.clock.Advance(10 * time.Second)
	assert.Equal(t, http.StatusOK, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status)
	e.clock.Advance(time.Hour)
	assert.Equal(t, http.StatusNotFound, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status)

	id2 := e.create(nil)
	past := e.clock.Now().Add(-time.Minute).Format(time.RFC3339)
	r = e.call("POST", "/v1/sandboxes/"+id2+"/renew-expiration", map[string]string{"expiresAt": past}, nil)
	assert.Equal(t, http.StatusBadRequest, r.Status)
	assert.Equal(t, "DOCKER::INVALID_EXPIRATION", r.JSON(t)["code"])
	r = e.call("POST", "/v1/sandboxes/"+id2+"/renew-expiration", map[string]string{}, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, r.Status)
	r = e.call("POST", "/v1/sandboxes/"+id2+"/renew-expiration", map[string]string{"expiresAt": "tomorrow"}, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, r.Status)
	r = e.call("POST", "/v1/sandboxes/nope/renew-expiration", map[string]string{"expiresAt": later.Format(time.RFC3339)}, nil)
	assert.Equal(t, http.StatusNotFound, r.Status)

	manual := e.create(func(m map[string]any) { delete(m, "timeout") })
	r = e.call("POST", "/v1/sandboxes/"+manual+"/renew-expiration", map[string]string{"expiresAt": later.Format(time.RFC3339)}, nil)
	assert.Equal(t, http.StatusConflict, r.Status)
	assert.Equal(t, "DOCKER::INVALID_EXPIRATION", r.JSON(t)["code"])
}

func TestListFiltersAndPagination(t *testing.T) {
	e := newEnv(t)
	empty := e.call("GET", "/v1/sandboxes", nil, nil).JSON(t)
	assert.Equal(t, []any{}, empty["items"])
	assert.Equal(t, map[string]any{"page": 1.0, "pageSize": 20.0, "totalItems": 0.0, "totalPages": 0.0, "hasNextPage": false}, empty["pagination"])

	var ids []string
	for i := 0; i < 5; i++ {
		i := i
		ids = append(ids, e.create(func(m map[string]any) {
			m["metadata"] = map[string]string{"team": []string{"a", "b"}[i%2], "note": "n" + fmt.Sprint(i)}
		}))
		e.clock.Advance(time.Second)
	}
	e.rt.byID(ids[4]).setState(runtime.State{State: "Failed", Reason: "CONTAINER_EXITED_ERROR", ExitCode: 1})

	list := func(q string) (items []string, pag map[string]any) {
		t.Helper()
		r := e.call("GET", "/v1/sandboxes"+q, nil, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		m := r.JSON(t)
		for _, it := range m["items"].([]any) {
			items = append(items, it.(map[string]any)["id"].(string))
		}
		return items, m["pagination"].(map[string]any)
	}
	items, pag := list("")
	assert.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, items, "newest first")
	assert.Equal(t, 5.0, pag["totalItems"])

	items, _ = list("?state=running")
	assert.Equal(t, []string{ids[3], ids[2], ids[1], ids[0]}, items)
	items, _ = list("?state=FAILED&state=Paused")
	assert.Equal(t, []string{ids[4]}, items)
	items, _ = list("?metadata=" + url.QueryEscape("team=a"))
	assert.Equal(t, []string{ids[4], ids[2], ids[0]}, items)
	items, _ = list("?metadata=" + url.QueryEscape("team=a&note=n2"))
	assert.Equal(t, []string{ids[2]}, items)
	items, _ = list("?metadata=" + url.QueryEscape("team=a&note=n2") + "&state=Failed")
	assert.Empty(t, items)

	items, pag = list("?page=2&pageSize=2")
	assert.Equal(t, []string{ids[2], ids[1]}, items)
	assert.Equal(t, map[string]any{"page": 2.0, "pageSize": 2.0, "totalItems": 5.0, "totalPages": 3.0, "hasNextPage": true}, pag)
	items, pag = list("?page=3&pageSize=2")
	assert.Equal(t, []string{ids[0]}, items)
	assert.Equal(t, false, pag["hasNextPage"])
	items, _ = list("?page=9&pageSize=2")
	assert.Empty(t, items)
	_, pag = list("?pageSize=200")
	assert.Equal(t, 200.0, pag["pageSize"])

	for _, q := range []string{"?page=0", "?pageSize=0", "?pageSize=201", "?page=x", "?pageSize=1.5"} {
		r := e.call("GET", "/v1/sandboxes"+q, nil, nil)
		assert.Equal(t, http.StatusUnprocessableEntity, r.Status, q)
	}
	for _, q := range []string{"team", "team=a&&x=1", "=a&b"} {
		r := e.call("GET", "/v1/sandboxes?metadata="+url.QueryEscape(q), nil, nil)
		assert.Equal(t, http.StatusBadRequest, r.Status, q)
		assert.Equal(t, "INVALID_METADATA_FORMAT", r.JSON(t)["code"], q)
	}
	// A malformed percent escape is kept, as Starlette keeps it, never dropped:
	// a filter that lists everything would make a reap script delete every
	// sandbox of the key.
	r := e.call("GET", "/v1/sandboxes?metadata=%%%", nil, nil)
	assert.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
	assert.Equal(t, "INVALID_METADATA_FORMAT", r.JSON(t)["code"])
	items, _ = list("?metadata=team%3D%zz")
	assert.Empty(t, items, "team=%zz matches no sandbox")
	r = e.call("GET", "/v1/sandboxes?page=%zz", nil, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s", r.Body)
}

func TestPyQuery(t *testing.T) {
	q := pyQuery("a=1&b=x%20y+z&c=&d&e=%zz&e=%&f=%C3%A9%FF&&")
	assert.Equal(t, url.Values{"a": {"1"}, "b": {"x y z"}, "c": {""}, "d": {""}, "e": {"%zz", "%"},
		"f": {"é\ufffd"}}, q)
}

func TestParseQSLStrict(t *testing.T) {
	got, err := parseQSLStrict("a=1&b=x%20y&c=&d=e+f")
	require.NoError(t, err)
	assert.Equal(t, [][2]string{{"a", "1"}, {"b", "x y"}, {"d", "e f"}}, got)
	got, err = parseQSLStrict("a=%zz&b=%41")
	require.NoError(t, err, "parse_qsl keeps a malformed escape")
	assert.Equal(t, [][2]string{{"a", "%zz"}, {"b", "A"}}, got)
	for _, bad := range []string{"a", "a=1&", "&a=1", "a=1&&b=2"} {
		_, err := parseQSLStrict(bad)
		assert.Error(t, err, bad)
	}
}

func TestPatchMetadata(t *testing.T) {
	e := newEnv(t)
	id := e.create(func(m map[string]any) { m["metadata"] = map[string]string{"team": "a", "old": "x"} })
	r := e.call("PATCH", "/v1/sandboxes/"+id+"/metadata", map[string]any{"team": "b", "old": nil, "new": "y", "absent": nil}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	m := r.JSON(t)
	assert.Equal(t, map[string]any{"team": "b", "new": "y"}, m["metadata"])
	assert.Contains(t, m, "entrypoint")
	r = e.call("PATCH", "/sandboxes/"+id+"/metadata", map[string]any{}, nil)
	assert.Equal(t, map[string]any{"team": "b", "new": "y"}, r.JSON(t)["metadata"])
	r = e.call("PATCH", "/v1/sandboxes/"+id+"/metadata", map[string]any{"team": nil, "new": nil}, nil)
	assert.NotContains(t, r.JSON(t), "metadata", "empty metadata is omitted")

	r = e.call("PATCH", "/v1/sandboxes/"+id+"/metadata", map[string]any{"opensandbox.io/x": "1"}, nil)
	assert.Equal(t, http.StatusBadRequest, r.Status)
	assert.Equal(t, "INVALID_METADATA_LABEL", r.JSON(t)["code"])
	r = e.call("PATCH", "/v1/sandboxes/"+id+"/metadata", map[string]any{"k": strings.Repeat("v", 64)}, nil)
	assert.Equal(t, http.StatusBadRequest, r.Status)
	assert.Equal(t, "SANDBOX::INVALID_METADATA_LABEL", r.JSON(t)["code"])
	r = e.call("PATCH", "/v1/sandboxes/"+id+"/metadata", map[string]any{"k": 5}, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, r.Status)
	r = e.call("PATCH", "/v1/sandboxes/"+id+"/metadata", "not json", nil)
	assert.Equal(t, http.StatusUnprocessableEntity, r.Status)
	r = e.call("PATCH", "/v1/sandboxes/nope/metadata", map[string]any{"k": "v"}, nil)
	assert.Equal(t, http.StatusNotFound, r.Status)
}

func TestPauseResume(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	r := e.call("POST", "/v1/sandboxes/"+id+"/resume", nil, nil)
	assert.Equal(t, http.StatusConflict, r.Status)
	assert.Equal(t, "DOCKER::SANDBOX_NOT_PAUSED", r.JSON(t)["code"])

	r = e.call("POST", "/v1/sandboxes/"+id+"/pause", nil, nil)
	assert.Equal(t, http.StatusAccepted, r.Status)
	assert.Empty(t, r.Body)
	assert.True(t, e.rt.byID(id).isPaused())
	st := e.call("GET", "/v1/sandboxes/"+id, nil, nil).JSON(t)["status"].(map[string]any)
	assert.Equal(t, "Paused", st["state"])
	assert.Equal(t, "CONTAINER_PAUSED", st["reason"])
	items := e.call("GET", "/v1/sandboxes?state=paused", nil, nil).JSON(t)["items"].([]any)
	assert.Len(t, items, 1)

	r = e.call("POST", "/v1/sandboxes/"+id+"/pause", nil, nil)
	assert.Equal(t, http.StatusConflict, r.Status)
	assert.Equal(t, "DOCKER::SANDBOX_NOT_RUNNING", r.JSON(t)["code"])

	r = e.call("POST", "/sandboxes/"+id+"/resume", nil, nil)
	assert.Equal(t, http.StatusAccepted, r.Status)
	assert.Empty(t, r.Body)
	assert.False(t, e.rt.byID(id).isPaused())
	st = e.call("GET", "/v1/sandboxes/"+id, nil, nil).JSON(t)["status"].(map[string]any)
	assert.Equal(t, "Running", st["state"])

	assert.Equal(t, http.StatusNotFound, e.call("POST", "/v1/sandboxes/nope/pause", nil, nil).Status)
	assert.Equal(t, http.StatusNotFound, e.call("POST", "/v1/sandboxes/nope/resume", nil, nil).Status)
	reasons := []string{}
	for _, ev := range e.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindState}) {
		reasons = append(reasons, ev.State.Reason)
	}
	assert.Equal(t, []string{"created", "paused", "resumed"}, reasons)
}

func TestEntrypointExitState(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	ok := e.create(nil)
	e.rt.byID(id).setState(runtime.State{State: "Failed", Reason: "CONTAINER_EXITED_ERROR", ExitCode: 2,
		Since: e.clock.Now().Add(time.Second)})
	e.rt.byID(ok).setState(runtime.State{State: "Terminated", Reason: "CONTAINER_EXITED", ExitCode: 0})
	st := e.call("GET", "/v1/sandboxes/"+id, nil, nil).JSON(t)["status"].(map[string]any)
	assert.Equal(t, "Failed", st["state"])
	assert.Equal(t, "CONTAINER_EXITED_ERROR", st["reason"])
	st = e.call("GET", "/v1/sandboxes/"+ok, nil, nil).JSON(t)["status"].(map[string]any)
	assert.Equal(t, "Terminated", st["state"])
	r := e.call("POST", "/v1/sandboxes/"+id+"/pause", nil, nil)
	assert.Equal(t, http.StatusConflict, r.Status)
	evs := e.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindState})
	assert.Equal(t, "entrypoint exited 2", evs[len(evs)-1].State.Reason)
	assert.Equal(t, "Failed", evs[len(evs)-1].State.To)
}

func TestEndpoints(t *testing.T) {
	e := newEnv(t, withEgress(newFakeEgress()))
	plain := e.create(nil)
	withPolicy := e.create(func(m map[string]any) {
		m["networkPolicy"] = map[string]any{"defaultAction": "deny", "egress": []any{map[string]string{"action": "allow", "target": "pypi.org"}}}
	})
	get := func(id, port, q string) resp {
		return e.call("GET", "/v1/sandboxes/"+id+"/endpoints/"+port+q, nil, nil)
	}
	m := get(plain, "44772", "?use_server_proxy=false").JSON(t)
	ep := m["endpoint"].(string)
	assert.Regexp(t, `^127\.0\.0\.1:\d+/proxy/44772$`, ep, "Docker bridge form, as the real server answers")
	ep = strings.TrimSuffix(ep, "/proxy/44772")
	assert.NotContains(t, m, "headers")
	assert.Equal(t, ep+"/proxy/8080", get(plain, "8080", "").JSON(t)["endpoint"])
	m = get(plain, "18080", "").JSON(t)
	assert.Equal(t, ep+"/proxy/18080", m["endpoint"], "18080 resolves even without a policy")
	assert.NotContains(t, m, "headers")

	m = get(withPolicy, "18080", "").JSON(t)
	assert.Equal(t, map[string]any{"OPENSANDBOX-EGRESS-AUTH": "egress-token-" + withPolicy[:8]}, m["headers"])
	m = get(withPolicy, "18080", "?use_server_proxy=true").JSON(t)
	assert.Equal(t, e.srv.Domain()+"/sandboxes/"+withPolicy+"/proxy/18080", m["endpoint"])
	assert.Contains(t, m, "headers", "headers survive use_server_proxy")
	m = get(plain, "44772", "?use_server_proxy=True").JSON(t)
	assert.Equal(t, e.srv.Domain()+"/sandboxes/"+plain+"/proxy/44772", m["endpoint"])
	for _, v := range []string{"44772", "8080", "18080"} {
		assert.NotContains(t, get(plain, v, "").JSON(t)["endpoint"], "://")
	}

	assert.Equal(t, http.StatusUnprocessableEntity, get(plain, "abc", "").Status)
	assert.Equal(t, http.StatusUnprocessableEntity, get(plain, "80", "?use_server_proxy=maybe").Status)
	r := get(plain, "0", "")
	assert.Equal(t, http.StatusBadRequest, r.Status)
	assert.Equal(t, "DOCKER::INVALID_PORT", r.JSON(t)["code"])
	assert.Equal(t, "DOCKER::INVALID_PORT", get(plain, "70000", "").JSON(t)["code"])
	assert.Equal(t, "SANDBOX::API_NOT_SUPPORTED", get(plain, "80", "?expires=123").JSON(t)["code"])
	assert.Equal(t, "SANDBOX::INVALID_PARAMETER", get(plain, "80", "?expires=123&use_server_proxy=true").JSON(t)["code"])
	assert.Equal(t, http.StatusNotFound, get("nope", "80", "").Status)
	// egress got the raw policy
	assert.JSONEq(t, `{"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"}]}`, string(e.egress.attached[withPolicy]))
	e.call("DELETE", "/v1/sandboxes/"+withPolicy, nil, nil)
	assert.True(t, e.egress.closed[withPolicy], "egress attachment closed on delete")
}

func TestMiscRoutes(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	for _, p := range []string{"/v1", ""} {
		r := e.call("GET", p+"/sandboxes/"+id+"/diagnostics/logs?scope=container", nil, nil)
		assert.Equal(t, http.StatusOK, r.Status)
		assert.Equal(t, "inline", r.JSON(t)["delivery"])
		r = e.call("GET", p+"/sandboxes/"+id+"/diagnostics/events?scope=all", nil, nil)
		assert.Equal(t, http.StatusOK, r.Status)
		for _, kind := range []string{"logs", "events", "inspect", "summary"} {
			req, _ := http.NewRequest("GET", e.srv.URL()+p+"/sandboxes/"+id+"/diagnostics/"+kind, nil)
			req.Header.Set(headerAPIKey, testKey)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			res.Body.Close()
			assert.Equal(t, http.StatusOK, res.StatusCode, kind)
			if kind == "logs" || kind == "events" {
				assert.Equal(t, "true", res.Header.Get("Deprecation"))
			}
			assert.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain"))
		}
		assert.Equal(t, http.StatusUnprocessableEntity, e.call("GET", p+"/sandboxes/"+id+"/diagnostics/logs?tail=0", nil, nil).Status)
		assert.Equal(t, http.StatusNotFound, e.call("GET", p+"/sandboxes/nope/diagnostics/logs", nil, nil).Status)

		for _, m := range []string{"GET", "POST"} {
			r = e.call(m, p+"/pools", map[string]any{"name": "x"}, nil)
			assert.Equal(t, http.StatusNotImplemented, r.Status)
			assert.Equal(t, "KUBERNETES::POOL_NOT_SUPPORTED", r.JSON(t)["code"])
		}
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			assert.Equal(t, http.StatusNotImplemented, e.call(m, p+"/pools/x", nil, nil).Status)
		}
		// Snapshots at both prefixes (TestSnapshotsAsDocker has the rest).
		assert.Equal(t, http.StatusAccepted, e.call("POST", p+"/sandboxes/"+id+"/snapshots", nil, nil).Status)
		assert.Equal(t, http.StatusOK, e.call("GET", p+"/snapshots", nil, nil).Status)
		for _, m := range []string{"GET", "DELETE"} {
			r = e.call(m, p+"/snapshots/s1", nil, nil)
			assert.Equal(t, http.StatusNotFound, r.Status)
			assert.Equal(t, "SNAPSHOT::NOT_FOUND", r.JSON(t)["code"])
		}
		r = e.call("POST", p+"/metrics/events", map[string]any{"eventType": "sandbox.create", "sandboxId": id}, nil)
		if p == "" { // the real server includes its metrics router under /v1 only
			assert.Equal(t, http.StatusNotFound, r.Status)
			assert.JSONEq(t, `{"detail":"Not Found"}`, string(r.Body))
		} else {
			assert.Equal(t, http.StatusNoContent, r.Status)
		}
	}
	// CORS preflight
	req, _ := http.NewRequest("OPTIONS", e.srv.URL()+"/v1/sandboxes", nil)
	req.Header.Set("Origin", "http://localhost:3000")
	req.Header.Set("Access-Control-Request-Method", "POST")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "http://localhost:3000", res.Header.Get("Access-Control-Allow-Origin"))
}

func TestCloseRemovesEverySandbox(t *testing.T) {
	e := newEnv(t)
	a, b := e.create(nil), e.create(nil)
	require.NoError(t, e.srv.Close())
	assert.True(t, e.rt.byID(a).isDestroyed())
	assert.True(t, e.rt.byID(b).isDestroyed())
	require.NoError(t, e.srv.Close(), "Close twice is fine")
	for _, info := range e.srv.Sandboxes() {
		assert.Equal(t, "Deleted", info.State)
	}
}
