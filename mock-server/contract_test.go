package mockserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The contract checks validate every /v1 exchange the tests make against
// specs/sandbox-lifecycle.yml (from $OSB_SPEC_DIR, else
// ../shared/opensandbox/specs relative to the repo root). What the spec and
// this server (like the real implementation) disagree on is tolerated only
// through the Deviations list in deviations.go.

var spec struct {
	once   sync.Once
	path   string
	doc    *openapi3.T
	router routers.Router
	err    error
	// checked counts validated exchanges; tolerated counts deviations used.
	mu        sync.Mutex
	checked   int
	tolerated map[string]int
}

func specDir() string {
	if d := os.Getenv("OSB_SPEC_DIR"); d != "" {
		return d
	}
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "opensandbox", "specs")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func loadSpec() {
	spec.once.Do(func() {
		spec.tolerated = map[string]int{}
		dir := specDir()
		spec.path = filepath.Join(dir, "sandbox-lifecycle.yml")
		if _, err := os.Stat(spec.path); err != nil {
			spec.err = fmt.Errorf("spec not found at %s (set OSB_SPEC_DIR): %w", spec.path, err)
			return
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile(spec.path)
		if err != nil {
			spec.err = fmt.Errorf("load %s: %w", spec.path, err)
			return
		}
		doc.Servers = openapi3.Servers{{URL: "http://localhost:8080/v1"}}
		r, err := legacy.NewRouter(doc)
		if err != nil {
			spec.err = fmt.Errorf("router for %s: %w", spec.path, err)
			return
		}
		spec.doc, spec.router = doc, r
	})
}

func tolerate(t *testing.T, id string) {
	t.Helper()
	require.True(t, DeviationIDs()[id], "deviation %q is not listed in deviations.go", id)
	spec.mu.Lock()
	spec.tolerated[id]++
	spec.mu.Unlock()
}

// validateExchange checks one request/response pair against the spec and
// fails the test on any violation not covered by a listed deviation.
func validateExchange(t *testing.T, method, path string, hdr http.Header, body []byte, r resp) {
	t.Helper()
	for _, p := range contractProblems(t, method, path, hdr, body, r) {
		t.Error("contract: " + p)
	}
}

// contractProblems returns the spec violations of one exchange.
func contractProblems(t *testing.T, method, path string, hdr http.Header, body []byte, r resp) []string {
	t.Helper()
	var problems []string
	loadSpec()
	if spec.router == nil || !strings.HasPrefix(path, "/v1/") {
		return nil
	}
	req, err := http.NewRequest(method, "http://localhost:8080"+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = hdr.Clone()
	route, params, err := spec.router.FindRoute(req)
	// The real server routes on the decoded path: an encoded "/" splits a
	// segment there, so such a path fits no documented route.
	if err != nil || strings.Count(req.URL.Path, "/") != strings.Count(req.URL.EscapedPath(), "/") {
		tolerate(t, "undocumented-routes") // proxy, diagnostics, pools, metrics
		return nil
	}
	spec.mu.Lock()
	spec.checked++
	spec.mu.Unlock()
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if r.Status < 400 {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil && onlyEnvNull(err) {
			tolerate(t, "env-null-values")
		} else if err != nil && strings.HasSuffix(path, "/renew-expiration") && onlyAt(err, `"/expiresAt"`) {
			tolerate(t, "renew-lax-datetime")
		} else if err != nil {
			problems = append(problems, fmt.Sprintf("request %s %s violates the spec: %v", method, path, err))
		}
	}

	status := r.Status
	if route.Operation.Responses.Status(status) == nil && route.Operation.Responses.Default() == nil {
		var m map[string]any
		_ = json.Unmarshal(r.Body, &m)
		switch {
		case status == http.StatusUnprocessableEntity:
			tolerate(t, "validation-422")
		case status == http.StatusNotImplemented && strings.HasPrefix(fmt.Sprint(m["code"]), "SNAPSHOT::"):
			tolerate(t, "snapshots")
		case status == http.StatusNotFound && m["code"] == "SNAPSHOT::NOT_FOUND":
			tolerate(t, "snapshots")
		case status == http.StatusTooManyRequests && m["code"] == "KUBERNETES::POOL_CAPACITY_EXHAUSTED" && r.Header.Get("Retry-After") != "":
			tolerate(t, "capacity-429")
		default:
			problems = append(problems, fmt.Sprintf("%s %s answered %d, a status the spec does not declare: %s", method, path, status, r.Body))
		}
		return problems
	}
	header := r.Header.Clone()
	if id := header.Get(headerRequestID); hex32.MatchString(id) {
		// uuid4().hex has no dashes; the spec says format uuid.
		tolerate(t, "request-id-hex")
		header.Set(headerRequestID, id[0:8]+"-"+id[8:12]+"-"+id[12:16]+"-"+id[16:20]+"-"+id[20:])
	}
	if method == http.MethodPost && path == "/v1/sandboxes" && status == http.StatusAccepted {
		tolerate(t, "no-location-header")
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(r.Body)), Options: &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		problems = append(problems, fmt.Sprintf("response %d to %s %s violates the spec: %v\nbody: %s", status, method, path, err, r.Body))
	}
	return problems
}

// TestContractSpecAvailable makes the skip visible and runs a representative
// flow whose every exchange is validated by call().
func TestContractSpecAvailable(t *testing.T) {
	loadSpec()
	if spec.err != nil {
		t.Skipf("contract validation not measured: %v", spec.err)
	}
	e := newEnv(t, withEgress(newFakeEgress()))
	id := e.create(func(m map[string]any) {
		m["metadata"] = map[string]string{"team": "a"}
		m["networkPolicy"] = map[string]any{"defaultAction": "deny", "egress": []any{map[string]any{"action": "allow", "target": "pypi.org"}}}
	})
	e.call("GET", "/v1/sandboxes/"+id, nil, nil)
	e.call("GET", "/v1/sandboxes?state=Running&metadata=team%3Da&page=1&pageSize=10", nil, nil)
	e.call("PATCH", "/v1/sandboxes/"+id+"/metadata", map[string]any{"env": "prod", "team": nil}, nil)
	e.call("GET", "/v1/sandboxes/"+id+"/endpoints/44772?use_server_proxy=false", nil, nil)
	e.call("GET", "/v1/sandboxes/"+id+"/endpoints/18080?use_server_proxy=true", nil, nil)
	e.call("POST", "/v1/sandboxes/"+id+"/renew-expiration", map[string]any{"expiresAt": formatTime(e.clock.Now().Add(3600e9))}, nil)
	e.call("POST", "/v1/sandboxes/"+id+"/pause", nil, nil)
	e.call("POST", "/v1/sandboxes/"+id+"/pause", nil, nil)
	e.call("POST", "/v1/sandboxes/"+id+"/resume", nil, nil)
	e.call("GET", "/v1/sandboxes/"+id+"/endpoints/abc", nil, nil)
	e.call("POST", "/v1/sandboxes", map[string]any{"timeout": 10}, nil)
	e.call("GET", "/v1/snapshots", nil, nil)
	e.call("GET", "/v1/sandboxes/nope", nil, nil)
	e.call("GET", "/v1/sandboxes", nil, map[string]string{headerAPIKey: ""})
	e.call("DELETE", "/v1/sandboxes/"+id, nil, nil)
	spec.mu.Lock()
	defer spec.mu.Unlock()
	assert.Greater(t, spec.checked, 10)
	t.Logf("validated %d exchanges against %s; deviations used: %v", spec.checked, spec.path, spec.tolerated)
}

func TestDeviationsListed(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Deviations {
		assert.False(t, seen[d.ID], "duplicate %s", d.ID)
		seen[d.ID] = true
		assert.NotEmpty(t, d.Spec)
		assert.NotEmpty(t, d.Server)
		assert.NotEmpty(t, d.Source)
	}
}

// TestContractValidatorCatchesViolations proves the validator is not a no-op.
func TestContractValidatorCatchesViolations(t *testing.T) {
	loadSpec()
	if spec.err != nil {
		t.Skipf("contract validation not measured: %v", spec.err)
	}
	h := http.Header{"Content-Type": {"application/json"}, headerRequestID: {newRequestID()}}
	bad := []resp{
		{Status: 200, Header: h, Body: []byte(`{"id":"x","status":{"state":"Running"},"entrypoint":["a"],"createdAt":null}`)},
		{Status: 200, Header: h, Body: []byte(`{"id":"x","status":{"state":"Running"},"entrypoint":["a"]}`)},
		{Status: 201, Header: h, Body: []byte(`{"id":"x"}`)},
	}
	for i, r := range bad {
		assert.NotEmpty(t, contractProblems(t, "GET", "/v1/sandboxes/x", http.Header{}, nil, r), "case %d", i)
	}
	good := resp{Status: 200, Header: h, Body: []byte(`{"id":"x","status":{"state":"Running"},"entrypoint":["a"],"createdAt":"2026-11-29T06:48:55.599805Z"}`)}
	assert.Empty(t, contractProblems(t, "GET", "/v1/sandboxes/x", http.Header{}, nil, good))
}

// onlyEnvNull reports whether every request-validation error is a null env value.
// onlyAt reports whether every error of a request validation is about the
// field at pointer (e.g. `"/expiresAt"`).
func onlyAt(err error, pointer string) bool {
	var me openapi3.MultiError
	errs := []error{err}
	if errors.As(err, &me) {
		errs = me
	}
	for _, e := range errs {
		if !strings.Contains(e.Error(), "error at "+pointer) {
			return false
		}
	}
	return true
}

func onlyEnvNull(err error) bool {
	var me openapi3.MultiError
	errs := []error{err}
	if errors.As(err, &me) {
		errs = me
	}
	for _, e := range errs {
		msg := e.Error()
		if !strings.Contains(msg, `"/env/`) || !strings.Contains(msg, "not nullable") {
			return false
		}
	}
	return true
}
