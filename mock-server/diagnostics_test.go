package mockserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiagnosticsAsDocker: with scope, logs and events answer 1.1.1's Docker
// descriptor (inline text; logs: container|all, events: runtime|all, others
// 400 DIAGNOSTICS_SCOPE_UNSUPPORTED before the sandbox is looked up; an
// unknown sandbox 404), valid against specs/diagnostic-api.yml.
func TestDiagnosticsAsDocker(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	sb := e.srv.lookup(id)
	require.NotNil(t, sb)
	fs := sb.rt.(*fakeSandbox)
	for i := 0; i < 150; i++ {
		fs.logLine(e.clock.Now(), "line "+strings.Repeat("x", i%3))
	}
	// A command's output is execd's answer to its caller, never the
	// container log (as on Docker).
	sb.output.Add("c1", "stdout", "COMMAND-OUTPUT\n")
	validate := diagnosticsValidator(t)

	r := e.call("GET", "/v1/sandboxes/"+id+"/diagnostics/logs?scope=%20Container%20", nil, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	m := r.JSON(t)
	assert.Equal(t, id, m["sandboxId"])
	assert.Equal(t, "logs", m["kind"])
	assert.Equal(t, "container", m["scope"], "scope is normalized (strip, lower)")
	assert.Equal(t, "inline", m["delivery"])
	assert.Equal(t, "text/plain; charset=utf-8", m["contentType"])
	assert.Equal(t, true, m["truncated"], "150 lines are cut to the last 100")
	content := m["content"].(string)
	assert.Equal(t, 100, strings.Count(content, "\n"))
	assert.NotContains(t, content, "COMMAND-OUTPUT")
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line x*\n`, content, "each line stamped as docker logs --timestamps")
	assert.Equal(t, float64(len(content)), m["contentLength"])
	assert.NotContains(t, m, "warnings")
	validate("/v1/sandboxes/"+id+"/diagnostics/logs?scope=container", r)

	r = e.call("GET", "/v1/sandboxes/"+id+"/diagnostics/logs?scope=all", nil, nil)
	require.Equal(t, http.StatusOK, r.Status)
	assert.Equal(t, []any{"The current backend only contributes sandbox container logs to the all scope."}, r.JSON(t)["warnings"])

	r = e.call("GET", "/v1/sandboxes/"+id+"/diagnostics/events?scope=runtime", nil, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	m = r.JSON(t)
	assert.Equal(t, "events", m["kind"])
	assert.Equal(t, false, m["truncated"])
	assert.Contains(t, m["content"], "(sandbox-"+id+")")
	assert.Contains(t, m["content"], "Status:     running")
	validate("/v1/sandboxes/"+id+"/diagnostics/events?scope=runtime", r)
	r = e.call("GET", "/v1/sandboxes/"+id+"/diagnostics/events?scope=all", nil, nil)
	assert.Equal(t, []any{"The current backend only contributes runtime events to the all scope."}, r.JSON(t)["warnings"])

	for path, msg := range map[string]string{
		"logs?scope=runtime":   "Unsupported logs diagnostics scope 'runtime'. Supported scopes: container, all.",
		"events?scope=network": "Unsupported events diagnostics scope 'network'. Supported scopes: runtime, all.",
		"logs?scope=":          "Unsupported logs diagnostics scope ''. Supported scopes: container, all.",
	} {
		for _, sid := range []string{id, "nope"} {
			r = e.call("GET", "/v1/sandboxes/"+sid+"/diagnostics/"+path, nil, nil)
			assert.Equal(t, http.StatusBadRequest, r.Status, path)
			assert.Equal(t, "DIAGNOSTICS_SCOPE_UNSUPPORTED", r.JSON(t)["code"], path)
			assert.Equal(t, msg, r.JSON(t)["message"], path)
		}
	}
	r = e.call("GET", "/v1/sandboxes/nope/diagnostics/logs?scope=container", nil, nil)
	assert.Equal(t, http.StatusNotFound, r.Status)
	validate("/v1/sandboxes/nope/diagnostics/logs?scope=container", r)
	// FastAPI validates the deprecated parameters even with scope.
	assert.Equal(t, http.StatusUnprocessableEntity, e.call("GET", "/v1/sandboxes/"+id+"/diagnostics/logs?scope=container&tail=0", nil, nil).Status)
	assert.Equal(t, http.StatusUnprocessableEntity, e.call("GET", "/v1/sandboxes/"+id+"/diagnostics/events?scope=runtime&limit=501", nil, nil).Status)

	// A fresh sandbox's logs are "(no logs)", as Docker's.
	id2 := e.create(nil)
	r = e.call("GET", "/v1/sandboxes/"+id2+"/diagnostics/logs?scope=container", nil, nil)
	assert.Equal(t, "(no logs)", r.JSON(t)["content"])
	assert.Equal(t, false, r.JSON(t)["truncated"])
}

// diagnosticsValidator checks an answer against specs/diagnostic-api.yml.
func diagnosticsValidator(t *testing.T) func(path string, r resp) {
	p := filepath.Join(specDir(), "diagnostic-api.yml")
	if _, err := os.Stat(p); err != nil {
		t.Logf("spec not validated: %v (set OSB_SPEC_DIR)", err)
		return func(string, resp) {}
	}
	doc, err := openapi3.NewLoader().LoadFromFile(p)
	require.NoError(t, err)
	doc.Servers = openapi3.Servers{{URL: "http://localhost:8080/v1"}}
	router, err := legacy.NewRouter(doc)
	require.NoError(t, err)
	return func(path string, r resp) {
		t.Helper()
		req, err := http.NewRequest("GET", "http://localhost:8080"+path, nil)
		require.NoError(t, err)
		route, params, err := router.FindRoute(req)
		require.NoError(t, err)
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		header := r.Header.Clone()
		header.Del(headerRequestID) // uuid4().hex (deviation request-id-hex)
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.Status, Header: header,
			Body: io.NopCloser(bytes.NewReader(r.Body)), Options: &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true}}
		assert.NoError(t, openapi3filter.ValidateResponse(context.Background(), out), "%s: %s", path, r.Body)
	}
}

// TestDiagnosticsLogsTailAndSince: the deprecated text route reads the
// container log as 1.1.1 on Docker does: its last tail lines, those written
// in the last since ("90s", "2m", "1h", "3d"; anything else is ten minutes)
// only, stamped, "(no logs)" when nothing is left.
func TestDiagnosticsLogsTailAndSince(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	fs := e.srv.lookup(id).rt.(*fakeSandbox)
	now := e.clock.Now()
	fs.logLine(now.Add(-2*time.Hour), "two hours ago")
	fs.logLine(now.Add(-20*time.Minute), "twenty minutes ago")
	fs.logLine(now.Add(-5*time.Minute), "five minutes ago")
	fs.logLine(now.Add(-30*time.Second), "thirty seconds ago")
	text := func(q string) string {
		req, _ := http.NewRequest("GET", e.srv.URL()+"/v1/sandboxes/"+id+"/diagnostics/logs"+q, nil)
		req.Header.Set(headerAPIKey, testKey)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, q)
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	lines := func(q string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSuffix(text(q), "\n"), "\n") {
			_, msg, _ := strings.Cut(l, " ")
			out = append(out, msg)
		}
		return out
	}
	assert.Equal(t, []string{"two hours ago", "twenty minutes ago", "five minutes ago", "thirty seconds ago"}, lines(""))
	assert.Equal(t, []string{"five minutes ago", "thirty seconds ago"}, lines("?tail=2"))
	assert.Equal(t, []string{"thirty seconds ago"}, lines("?since=90s"))
	assert.Equal(t, []string{"thirty seconds ago"}, lines("?since=1%20M"), "a space and capitals are allowed")
	assert.Equal(t, []string{"five minutes ago", "thirty seconds ago"}, lines("?since=nonsense"), "unreadable: ten minutes")
	assert.Equal(t, []string{"twenty minutes ago", "five minutes ago", "thirty seconds ago"}, lines("?since=1h"))
	assert.Len(t, lines("?since=99999999999999999999d"), 4, "beyond any age: every line")
	assert.Equal(t, []string{"thirty seconds ago"}, lines("?since=2m&tail=1"))
	assert.Equal(t, "(no logs)", text("?since=1s"))
}
