package mockserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testKey   = "test-key-0f1e2d3c4b5a"
	testAdmin = "admin-token-for-tests"
)

type testEnv struct {
	t      *testing.T
	srv    *Server
	rt     *fakeRuntime
	clock  *fakeClock
	egress *fakeEgress
	dir    string
	client *http.Client
}

type envOption func(*Config)

func withEgress(e *fakeEgress) envOption { return func(c *Config) { c.Egress = e } }
func withMaxTimeout(d time.Duration) envOption {
	return func(c *Config) { c.MaxTimeout = d }
}

func newEnv(t *testing.T, opts ...envOption) *testEnv {
	t.Helper()
	rt := &fakeRuntime{t: t}
	clock := newFakeClock()
	dir := t.TempDir()
	cfg := Config{APIKey: testKey, AdminToken: testAdmin, StateDir: dir, MaxTimeout: 24 * time.Hour,
		Clock: clock, Runtime: rt}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	env := &testEnv{t: t, srv: srv, rt: rt, clock: clock, dir: dir, client: &http.Client{Timeout: 20 * time.Second}}
	if e, ok := cfg.Egress.(*fakeEgress); ok {
		env.egress = e
	}
	t.Cleanup(func() { _ = srv.Close() })
	return env
}

type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r resp) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	return m
}

// call sends a request to the lifecycle server with the API key (unless a
// header map overrides it), checks invariants every response must satisfy,
// and validates the exchange against the OpenAPI spec when available.
func (e *testEnv) call(method, path string, body any, hdr map[string]string) resp {
	e.t.Helper()
	var rdr io.Reader
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		raw, err = json.Marshal(b)
		require.NoError(e.t, err)
	}
	if raw != nil {
		rdr = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.srv.URL()+path, rdr)
	require.NoError(e.t, err)
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(headerAPIKey, testKey)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := e.client.Do(req)
	require.NoError(e.t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(e.t, err)
	r := resp{Status: res.StatusCode, Header: res.Header, Body: out}
	e.checkInvariants(method, path, r)
	validateExchange(e.t, method, path, req.Header, raw, r)
	return r
}

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func (e *testEnv) checkInvariants(method, path string, r resp) {
	e.t.Helper()
	if strings.HasPrefix(path, "/_mock") || strings.Contains(path, "/proxy/") {
		return
	}
	assert.NotEmpty(e.t, r.Header.Get(headerRequestID), "%s %s: X-Request-ID missing", method, path)
	if r.Status == http.StatusInternalServerError {
		// Only the real server's own 500s (image pull / container start failures).
		assert.Regexp(e.t, `"code":"DOCKER::SANDBOX_(IMAGE_PULL|START)_FAILED"`, string(r.Body), "%s %s: unexpected 500", method, path)
	}
	if r.Status >= 400 && method != http.MethodHead { // a HEAD answer has no body
		require.NotEmpty(e.t, r.Body, "%s %s: empty error body", method, path)
		var m map[string]any
		require.NoError(e.t, json.Unmarshal(r.Body, &m), "%s %s: error body not JSON: %s", method, path, r.Body)
		_, hasDetail := m["detail"]
		_, hasCode := m["code"]
		assert.True(e.t, hasDetail || hasCode, "error body has neither code nor detail: %s", r.Body)
		if r.Status == http.StatusUnprocessableEntity {
			items, ok := m["detail"].([]any)
			require.True(e.t, ok && len(items) > 0, "422 detail must be a non-empty list: %s", r.Body)
			for _, it := range items {
				item := it.(map[string]any)
				for _, k := range []string{"type", "loc", "msg"} {
					assert.Contains(e.t, item, k)
				}
				assert.Contains(e.t, item, "input")
			}
		}
		if hasCode {
			assert.NotEmpty(e.t, m["code"])
			assert.NotEmpty(e.t, m["message"])
		}
	}
}

func validCreate() map[string]any {
	return map[string]any{
		"image":          map[string]any{"uri": "python:3.11"},
		"entrypoint":     []string{"tail", "-f", "/dev/null"},
		"resourceLimits": map[string]string{"cpu": "500m", "memory": "512Mi"},
		"timeout":        600,
	}
}

func (e *testEnv) create(mut func(map[string]any)) string {
	e.t.Helper()
	body := validCreate()
	if mut != nil {
		mut(body)
	}
	r := e.call("POST", "/v1/sandboxes", body, nil)
	require.Equal(e.t, http.StatusAccepted, r.Status, "create: %s", r.Body)
	id, _ := r.JSON(e.t)["id"].(string)
	require.NotEmpty(e.t, id)
	return id
}

func (e *testEnv) admin(method, path string, body any) resp {
	e.t.Helper()
	return e.call(method, path, body, map[string]string{headerAdminToken: testAdmin, headerAPIKey: ""})
}

func (e *testEnv) execdAddr(id string) string {
	e.t.Helper()
	r := e.call("GET", "/v1/sandboxes/"+id+"/endpoints/44772", nil, nil)
	require.Equal(e.t, http.StatusOK, r.Status)
	// The endpoint is <addr>/proxy/44772 (Docker bridge form); tests want the listener address.
	return strings.TrimSuffix(r.JSON(e.t)["endpoint"].(string), "/proxy/44772")
}

func (e *testEnv) auditFile() string {
	return filepath.Join(e.dir, "audit.jsonl")
}
