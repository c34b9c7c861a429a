package reference

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lifecycleFake is a minimal lifecycle API: create, get, delete, endpoint,
// list with a metadata filter, key check. It logs every request line.
type lifecycleFake struct {
	mu    sync.Mutex
	key   string
	next  int
	boxes map[string]map[string]string // id -> metadata
	log   []string
	srv   *httptest.Server
	// keylessCreate answers a keyless create with this status (0 = 401).
	keylessCreate int
}

func newLifecycleFake(t *testing.T) *lifecycleFake {
	f := &lifecycleFake{key: "k-123456789", boxes: map[string]map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *lifecycleFake) domain() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *lifecycleFake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log = append(f.log, r.Method+" "+r.URL.RequestURI())
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if v != nil {
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	if r.Header.Get("OPEN-SANDBOX-API-KEY") != f.key {
		if r.Method == "POST" && f.keylessCreate != 0 {
			f.next++
			id := fmt.Sprintf("stray-%d", f.next)
			f.boxes[id] = map[string]string{}
			reply(f.keylessCreate, map[string]any{"id": id})
			return
		}
		reply(401, map[string]string{"code": "MISSING_API_KEY", "message": "no key"})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // v1 sandboxes [id [endpoints port]]
	switch {
	case r.Method == "POST" && len(parts) == 2:
		var body struct {
			Metadata map[string]string `json:"metadata"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.next++
		id := fmt.Sprintf("sbx-%d", f.next)
		f.boxes[id] = body.Metadata
		reply(202, map[string]any{"id": id, "status": map[string]string{"state": "Running"}, "createdAt": "2026-11-30T15:00:00Z"})
	case r.Method == "GET" && len(parts) == 2:
		want := map[string]string{}
		for _, kv := range strings.Split(r.URL.Query().Get("metadata"), "&") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				want[k] = v
			}
		}
		items := []map[string]any{}
		for id, md := range f.boxes {
			match := true
			for k, v := range want {
				match = match && md[k] == v
			}
			if match {
				items = append(items, map[string]any{"id": id, "metadata": md, "createdAt": "2026-11-30T15:00:00Z", "status": map[string]string{"state": "Running"}})
			}
		}
		reply(200, map[string]any{"items": items, "pagination": map[string]any{"page": 1, "pageSize": 50, "totalItems": len(items), "totalPages": 1, "hasNextPage": false}})
	case len(parts) >= 3 && f.boxes[parts[2]] == nil:
		reply(404, map[string]string{"code": "SANDBOX_NOT_FOUND", "message": "no such sandbox"})
	case r.Method == "GET" && len(parts) == 3:
		reply(200, map[string]any{"id": parts[2], "status": map[string]string{"state": "Running"}, "createdAt": "x"})
	case r.Method == "DELETE" && len(parts) == 3:
		delete(f.boxes, parts[2])
		reply(204, nil)
	case r.Method == "GET" && len(parts) == 5 && parts[3] == "endpoints":
		reply(200, map[string]string{"endpoint": "127.0.0.1:45000"})
	default:
		reply(404, map[string]string{"code": "NOT_FOUND", "message": r.URL.Path})
	}
}

func TestContractRecordsEveryStep(t *testing.T) {
	f := newLifecycleFake(t)
	t.Setenv("OPEN_SANDBOX_DOMAIN", f.domain())
	t.Setenv("OPEN_SANDBOX_API_KEY", f.key)
	t.Setenv("CAPSTONE_RUN_ID", "run-7")
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main([]string{"contract", "--out", out}, &stdout, &stderr)
	require.Equal(t, 0, code, "stdout %s stderr %s", stdout.String(), stderr.String())

	b, err := os.ReadFile(filepath.Join(out, "contract.json"))
	require.NoError(t, err)
	var rec ContractRecord
	require.NoError(t, json.Unmarshal(b, &rec))
	require.Len(t, rec.Exchanges, 5)
	want := []struct{ step, method, path string }{
		{"create", "POST", "/v1/sandboxes"},
		{"endpoint", "GET", "/v1/sandboxes/sbx-1/endpoints/44772"},
		{"unauthorized", "POST", "/v1/sandboxes"},
		{"delete", "DELETE", "/v1/sandboxes/sbx-1"},
		{"get_after_delete", "GET", "/v1/sandboxes/sbx-1"},
	}
	for i, w := range want {
		ex := rec.Exchanges[i]
		assert.Equal(t, w.step, ex.Step)
		assert.Equal(t, w.method, ex.Method)
		assert.Equal(t, w.path, ex.Path)
		assert.Equal(t, ex.Expected, ex.Status, "%s", ex.Step)
	}
	assert.Equal(t, "sbx-1", rec.Exchanges[0].Fields["id"])
	assert.Equal(t, "Running", rec.Exchanges[0].Fields["status.state"])
	assert.Equal(t, "127.0.0.1:45000", rec.Exchanges[1].Fields["endpoint"])
	assert.Equal(t, "MISSING_API_KEY", rec.Exchanges[2].Fields["code"])
	// What the server saw is what was recorded, in order.
	assert.Equal(t, []string{"POST /v1/sandboxes", "GET /v1/sandboxes/sbx-1/endpoints/44772", "POST /v1/sandboxes",
		"DELETE /v1/sandboxes/sbx-1", "GET /v1/sandboxes/sbx-1"}, f.log)
	assert.Empty(t, f.boxes, "nothing left")
}

// A server that accepts a keyless create: the step is recorded as what it
// was (not 401), the check fails, and the stray sandbox is removed too.
func TestContractKeylessCreateAccepted(t *testing.T) {
	f := newLifecycleFake(t)
	f.keylessCreate = 202
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Main([]string{"contract", "--out", out, "--domain", f.domain(), "--api-key", f.key}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout.String(), "unauthorized")
	assert.Contains(t, stdout.String(), "202 (want 401) WRONG")
	assert.Empty(t, f.boxes, "the stray sandbox and the contract's own are deleted")
}

func TestContractUsage(t *testing.T) {
	t.Setenv("OPEN_SANDBOX_DOMAIN", "")
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, Main([]string{"contract", "--out", t.TempDir()}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "required")
}

func TestReapRemovesOnlyThisRun(t *testing.T) {
	f := newLifecycleFake(t)
	f.boxes["a"] = map[string]string{RunIDLabel: "run-1"}
	f.boxes["b"] = map[string]string{RunIDLabel: "run-1", "app": "x"}
	f.boxes["c"] = map[string]string{RunIDLabel: "run-2"}
	f.boxes["d"] = map[string]string{}
	t.Setenv("OPEN_SANDBOX_DOMAIN", f.domain())
	t.Setenv("OPEN_SANDBOX_API_KEY", f.key)
	t.Setenv("CAPSTONE_RUN_ID", "run-1")
	var stdout, stderr bytes.Buffer
	code := Main([]string{"reap"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stdout %s stderr %s", stdout.String(), stderr.String())
	assert.Contains(t, stdout.String(), "removed a ")
	assert.Contains(t, stdout.String(), "removed b ")
	assert.Contains(t, f.boxes, "c", "another run's sandbox is left alone")
	assert.Contains(t, f.boxes, "d", "an unlabelled sandbox is left alone")
	assert.NotContains(t, f.boxes, "a")
	assert.NotContains(t, f.boxes, "b")
	assert.Contains(t, f.log, "GET /v1/sandboxes/a", "the removal is confirmed with GET")

	stdout.Reset()
	require.Equal(t, 0, Main([]string{"reap"}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "nothing to remove")
}

func TestReapRefusesWithoutRunID(t *testing.T) {
	t.Setenv("CAPSTONE_RUN_ID", "")
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, Main([]string{"reap", "--domain", "127.0.0.1:1", "--api-key", "k"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "refusing to guess")
}

// The built-in unit checks pass under go test too, and the selftest command
// writes JUnit XML that says so; integration checks skip without a server.
func TestSelftestUnitChecks(t *testing.T) {
	for _, c := range unitChecks() {
		t.Run(c.name, func(t *testing.T) {
			r := runCheck(context.Background(), c)
			assert.Empty(t, r.Failures)
			assert.Empty(t, r.Skipped)
		})
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, Main([]string{"selftest", "unit", "--junit", junit}, &stdout, &stderr), stdout.String()+stderr.String())
	b, err := os.ReadFile(junit)
	require.NoError(t, err)
	var s junitSuite
	require.NoError(t, xml.Unmarshal(b, &s))
	assert.Equal(t, len(unitChecks()), s.Tests)
	assert.Zero(t, s.Failures)
}

func TestSelftestIntegrationSkipsWithoutServer(t *testing.T) {
	t.Setenv("OPEN_SANDBOX_DOMAIN", "")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, Main([]string{"selftest", "integration"}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "--- SKIP: TestSelfIntegrationClosedLoop")
	assert.Contains(t, stdout.String(), "not both set")
}

func TestSelftestIntegrationContractOnFake(t *testing.T) {
	f := newLifecycleFake(t)
	t.Setenv("OPEN_SANDBOX_DOMAIN", f.domain())
	t.Setenv("OPEN_SANDBOX_API_KEY", f.key)
	var c selfCheck
	for _, x := range integrationChecks() {
		if x.name == "TestSelfIntegrationContract" {
			c = x
		}
	}
	r := runCheck(context.Background(), c)
	assert.Empty(t, r.Failures)
	assert.Empty(t, f.boxes)
}
