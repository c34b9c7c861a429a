package observe

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeOSB is a tenantless lifecycle server in the shape of OpenSandbox's
// (CONTRACT.md §1.3, §1.10, §1.11): create, a paginated list, get, delete,
// renew, pause, endpoints (each sandbox's execd is its own test server,
// reached at host:port/proxy/{port} as Docker bridge mode gives it) and the
// server proxy route; an unknown sandbox is 404 DOCKER::SANDBOX_NOT_FOUND
// naming the id; a non-numeric port is 422.
type fakeOSB struct {
	mu      sync.Mutex
	ids     []string
	execd   map[string]*httptest.Server
	reached map[string]*atomic.Int64 // execd requests per sandbox
	deleted map[string]bool
	srv     *httptest.Server
}

func newFakeOSB(t *testing.T) *fakeOSB {
	f := &fakeOSB{execd: map[string]*httptest.Server{}, reached: map[string]*atomic.Int64{}, deleted: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.srv.Close()
		for _, s := range f.execd {
			s.Close()
		}
	})
	return f
}

func (f *fakeOSB) create(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := &atomic.Int64{}
	f.reached[id] = n
	f.execd[id] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		fmt.Fprintf(w, "execd of %s: %s %s", id, r.Method, r.URL.Path)
	}))
	f.ids = append(f.ids, id)
}

func (f *fakeOSB) alive(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.execd[id] != nil && !f.deleted[id]
}

func notFound(w http.ResponseWriter, id string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-ID", "0123456789abcdef0123456789abcdef")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, `{"code":"DOCKER::SANDBOX_NOT_FOUND","message":"Sandbox %s not found"}`, id)
}

func (f *fakeOSB) serve(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/v1"), "/"), "/")
	w.Header().Set("Content-Type", "application/json")
	if len(parts) == 1 && parts[0] == "sandboxes" {
		if r.Method == http.MethodPost {
			var req struct {
				Metadata map[string]string `json:"metadata"`
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			id := req.Metadata["want-id"]
			f.create(id)
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"id":%q,"status":{"state":"Running"}}`, id)
			return
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		size, _ := strconv.Atoi(r.URL.Query().Get("pageSize"))
		if r.URL.Query().Get("page") == "0" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, `{"detail":[{"type":"greater_than_equal","loc":["query","page"],"msg":"Input should be greater than or equal to 1","input":"0"}]}`)
			return
		}
		page, size = max(page, 1), max(size, 1)
		if r.URL.Query().Get("pageSize") == "" {
			size = 20
		}
		f.mu.Lock()
		var live []string
		for _, id := range f.ids {
			if !f.deleted[id] {
				live = append(live, id)
			}
		}
		f.mu.Unlock()
		items := []map[string]any{}
		for i := (page - 1) * size; i < min(page*size, len(live)); i++ {
			items = append(items, map[string]any{"id": live[i], "status": map[string]string{"state": "Running"}})
		}
		pages := (len(live) + size - 1) / size
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items, "pagination": map[string]any{
			"page": page, "pageSize": size, "totalItems": len(live), "totalPages": pages, "hasNextPage": page < pages}})
		return
	}
	if len(parts) < 2 || parts[0] != "sandboxes" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	id := parts[1]
	if len(parts) == 4 && parts[2] == "endpoints" {
		if _, err := strconv.Atoi(parts[3]); err != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprintf(w, `{"detail":[{"type":"int_parsing","loc":["path","port"],"msg":"Input should be a valid integer","input":%q}]}`, parts[3])
			return
		}
	}
	if !f.alive(id) {
		notFound(w, id)
		return
	}
	f.mu.Lock()
	execd := f.execd[id]
	f.mu.Unlock()
	switch {
	case len(parts) == 2 && r.Method == http.MethodGet:
		fmt.Fprintf(w, `{"id":%q,"status":{"state":"Running"}}`, id)
	case len(parts) == 2 && r.Method == http.MethodDelete:
		f.mu.Lock()
		f.deleted[id] = true
		f.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case len(parts) == 3 && parts[2] == "renew-expiration":
		fmt.Fprint(w, `{"expiresAt":"2026-12-01T18:00:00Z"}`)
	case len(parts) == 3 && parts[2] == "pause":
		w.WriteHeader(http.StatusAccepted)
	case len(parts) == 4 && parts[2] == "endpoints":
		fmt.Fprintf(w, `{"endpoint":"%s/proxy/%s","headers":{"X-Sandbox":%q}}`, strings.TrimPrefix(execd.URL, "http://"), parts[3], id)
	case len(parts) >= 4 && parts[2] == "proxy":
		// The server's own proxy route: to the sandbox's execd.
		res, err := http.Get(execd.URL + "/proxy/" + strings.Join(parts[3:], "/"))
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.Copy(w, res.Body)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

type answer struct {
	status int
	ctype  string
	body   string
}

func call(t *testing.T, method, url, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	req.Header.Set("OPEN-SANDBOX-API-KEY", "the-one-key")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return answer{res.StatusCode, res.Header.Get("Content-Type"), string(b)}
}

func listIDs(t *testing.T, a answer) (ids []string, pagination map[string]any) {
	t.Helper()
	require.Equal(t, http.StatusOK, a.status, a.body)
	var l struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
		Pagination map[string]any `json:"pagination"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.body), &l))
	for _, it := range l.Items {
		ids = append(ids, it.ID)
	}
	sort.Strings(ids)
	return ids, l.Pagination
}

// TestViewsOfATenantlessServer: on a target without tenants, each
// submission sees only its own sandboxes, through the recording proxy, against a fake tenantless OpenSandbox: two
// submissions (A with two proxies, as its run and its reap have, B with
// one) and a sandbox the harness created directly. Each list shows only the
// submission's own sandboxes, paginated as asked; get, delete, renew, pause
// and endpoint on the other's sandbox answer byte for byte what the server
// answers for an unknown id (and the other's sandbox lives on, its execd
// never reached); a validation error comes from the server as for any id;
// an endpoint of its own sandbox is rewritten through the proxy, reaches
// that sandbox's execd and is recorded with the sandbox id and port; the
// server proxy route to the other's sandbox is an unknown sandbox's.
func TestViewsOfATenantlessServer(t *testing.T) {
	f := newFakeOSB(t)
	upstream := f.srv.URL
	viewA, viewB := NewView(), NewView()
	runA, err := StartFor(upstream+"/v1", viewA)
	require.NoError(t, err)
	defer runA.Close()
	reapA, err := StartFor(upstream, viewA)
	require.NoError(t, err)
	defer reapA.Close()
	runB, err := StartFor(upstream, viewB)
	require.NoError(t, err)
	defer runB.Close()
	f.create("harness-own") // e.g. the preflight's sandbox: nobody's

	create := func(p *Proxy, id string) {
		a := call(t, "POST", "http://"+p.Domain()+"/v1/sandboxes", fmt.Sprintf(`{"image":{"uri":"python:3.12"},"metadata":{"want-id":%q}}`, id))
		require.Equal(t, http.StatusAccepted, a.status, a.body)
	}
	create(runA, "a1")
	create(runA, "a2")
	create(runB, "b1")
	assert.Equal(t, []string{"a1", "a2"}, viewA.IDs())

	all, _ := listIDs(t, call(t, "GET", upstream+"/v1/sandboxes?pageSize=200", ""))
	assert.Equal(t, []string{"a1", "a2", "b1", "harness-own"}, all, "the server itself has no tenants")
	ids, pag := listIDs(t, call(t, "GET", "http://"+reapA.Domain()+"/v1/sandboxes?pageSize=200", ""))
	assert.Equal(t, []string{"a1", "a2"}, ids, "A's reap lists what A's run created, nothing else")
	assert.Equal(t, map[string]any{"page": 1.0, "pageSize": 200.0, "totalItems": 2.0, "totalPages": 1.0, "hasNextPage": false}, pag)
	ids, pag = listIDs(t, call(t, "GET", "http://"+reapA.Domain()+"/sandboxes?pageSize=1&page=2", ""))
	assert.Equal(t, []string{"a2"}, ids, "paginated as asked")
	assert.Equal(t, map[string]any{"page": 2.0, "pageSize": 1.0, "totalItems": 2.0, "totalPages": 2.0, "hasNextPage": false}, pag)
	ids, _ = listIDs(t, call(t, "GET", "http://"+runB.Domain()+"/v1/sandboxes", ""))
	assert.Equal(t, []string{"b1"}, ids)
	bad := call(t, "GET", "http://"+runB.Domain()+"/v1/sandboxes?page=0", "")
	assert.Equal(t, call(t, "GET", upstream+"/v1/sandboxes?page=0", ""), bad, "a bad list request gets the server's own 422")

	// Another's sandbox is an unknown one, byte for byte.
	unknownAs := func(method, pathFmt, id string) answer {
		a := call(t, method, upstream+fmt.Sprintf(pathFmt, "never-created-0"), "")
		a.body = strings.ReplaceAll(a.body, "never-created-0", id)
		return a
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/sandboxes/%s"},
		{"DELETE", "/v1/sandboxes/%s"},
		{"POST", "/v1/sandboxes/%s/renew-expiration"},
		{"POST", "/v1/sandboxes/%s/pause"},
		{"GET", "/v1/sandboxes/%s/endpoints/44772"},
		{"GET", "/sandboxes/%s/endpoints/8080"},
		{"GET", "/v1/sandboxes/%s/endpoints/not-a-port"},
	} {
		want := unknownAs(c.method, c.path, "b1")
		got := call(t, c.method, "http://"+reapA.Domain()+fmt.Sprintf(c.path, "b1"), "")
		assert.Equal(t, want, got, "A: %s %s on B's sandbox answers as an unknown sandbox", c.method, c.path)
		assert.Contains(t, []int{404, 422}, got.status)
	}
	assert.True(t, f.alive("b1"), "A's DELETE never reached B's sandbox")
	assert.Equal(t, answer{404, "application/json", `{"code":"DOCKER::SANDBOX_NOT_FOUND","message":"Sandbox a1 not found"}`},
		call(t, "GET", "http://"+runB.Domain()+"/v1/sandboxes/a1", ""))
	assert.Equal(t, http.StatusNotFound, call(t, "GET", "http://"+runB.Domain()+"/v1/sandboxes/harness-own", "").status)

	// Its own sandbox: the endpoint goes through the proxy, reaches that
	// sandbox's execd, and is recorded.
	ep := call(t, "GET", "http://"+runA.Domain()+"/v1/sandboxes/a1/endpoints/44772?use_server_proxy=false", "")
	require.Equal(t, http.StatusOK, ep.status, ep.body)
	var e struct {
		Endpoint string            `json:"endpoint"`
		Headers  map[string]string `json:"headers"`
	}
	require.NoError(t, json.Unmarshal([]byte(ep.body), &e))
	assert.Equal(t, runA.Domain()+"/sandboxes/a1/proxy/44772", e.Endpoint, "no scheme, through the proxy")
	assert.Equal(t, map[string]string{"X-Sandbox": "a1"}, e.Headers, "the server's endpoint headers are kept")
	got := call(t, "POST", "http://"+e.Endpoint+"/command?x=1", `{"command":"true"}`)
	assert.Equal(t, "execd of a1: POST /proxy/44772/command", got.body)
	n := f.reached["b1"].Load()
	other := call(t, "GET", "http://"+runA.Domain()+"/sandboxes/b1/proxy/44772/ping", "")
	assert.Equal(t, unknownAs("GET", "/sandboxes/%s/proxy/44772/ping", "b1"), other, "the proxy route to another's sandbox: unknown")
	assert.Equal(t, n, f.reached["b1"].Load(), "B's execd was not reached")
	// Without an endpoint call first, its own sandbox's proxy route goes to the server's route.
	assert.Equal(t, "execd of a2: GET /proxy/44772/ping", call(t, "GET", "http://"+reapA.Domain()+"/sandboxes/a2/proxy/44772/ping", "").body)

	var execdCalls []string
	for _, c := range runA.EndpointCalls() {
		execdCalls = append(execdCalls, fmt.Sprintf("%s %s %s %d %d", c.SandboxID, c.Method, c.Path, c.Port, c.Status))
		assert.False(t, c.Ended.Before(c.Time))
	}
	assert.Equal(t, []string{"a1 POST /sandboxes/a1/proxy/44772/command?x=1 44772 200", "b1 GET /sandboxes/b1/proxy/44772/ping 44772 404"}, execdCalls)
	for _, c := range runA.Calls() {
		assert.Empty(t, c.Kind, "Calls are lifecycle calls only")
	}
	var deletes []string
	for _, c := range reapA.Calls() {
		if c.Method == "DELETE" {
			deletes = append(deletes, fmt.Sprintf("%s %d", c.SandboxID, c.Status))
		}
	}
	assert.Equal(t, []string{"b1 404"}, deletes, "the record names the sandbox asked for and what the submission was answered")
}

// TestVanishIsInstantForTheSubject is D2 on a real target: the harness
// deletes the subject's sandbox, which a real server does not do at once
// (Docker: kill, then remove, then the sidecar). From Vanish on, the
// subject's proxy answers every call on that sandbox as the server answers
// an unknown one, though the server still has it: a GET, a DELETE, the
// endpoint and the execd traffic through the rewritten endpoint all get the
// server's 404 for an unknown id, a list leaves it out, the sandbox's execd
// is not reached, and each call is recorded with the id asked for. Another
// sandbox of the same run is untouched; with or without a view.
func TestVanishIsInstantForTheSubject(t *testing.T) {
	for _, withView := range []bool{true, false} {
		t.Run(fmt.Sprintf("view=%v", withView), func(t *testing.T) {
			f := newFakeOSB(t)
			var v *View
			if withView {
				v = NewView()
			}
			p, err := StartFor(f.srv.URL, v)
			require.NoError(t, err)
			defer p.Close()
			base := "http://" + p.Domain()
			for _, id := range []string{"s1", "s2"} {
				a := call(t, "POST", base+"/v1/sandboxes", fmt.Sprintf(`{"image":{"uri":"python:3.12"},"metadata":{"want-id":%q}}`, id))
				require.Equal(t, http.StatusAccepted, a.status, a.body)
			}
			ep := call(t, "GET", base+"/v1/sandboxes/s1/endpoints/44772", "")
			require.Equal(t, http.StatusOK, ep.status, ep.body)
			var e struct {
				Endpoint string `json:"endpoint"`
			}
			require.NoError(t, json.Unmarshal([]byte(ep.body), &e))
			viaProxy := base + "/sandboxes/s1/proxy/44772"
			if withView {
				require.Equal(t, p.Domain()+"/sandboxes/s1/proxy/44772", e.Endpoint)
			}
			require.Equal(t, http.StatusOK, call(t, "POST", viaProxy+"/command", `{"command":"true"}`).status)
			before := f.reached["s1"].Load()

			p.Vanish("s1")
			require.True(t, f.alive("s1"), "the server still has it (its removal is under way)")
			unknownAs := func(method, pathFmt string) answer {
				a := call(t, method, f.srv.URL+fmt.Sprintf(pathFmt, "never-created-0"), "")
				a.body = strings.ReplaceAll(a.body, "never-created-0", "s1")
				return a
			}
			for _, c := range []struct{ method, path string }{
				{"GET", "/v1/sandboxes/%s"},
				{"DELETE", "/v1/sandboxes/%s"},
				{"GET", "/v1/sandboxes/%s/endpoints/44772"},
				{"POST", "/sandboxes/%s/proxy/44772/command"},
				{"GET", "/v1/sandboxes/%s/proxy/44772/ping"},
			} {
				got := call(t, c.method, base+fmt.Sprintf(c.path, "s1"), "")
				assert.Equal(t, unknownAs(c.method, c.path), got, "%s %s on the vanished sandbox answers as an unknown one", c.method, c.path)
				assert.Equal(t, http.StatusNotFound, got.status)
			}
			assert.Equal(t, before, f.reached["s1"].Load(), "the vanished sandbox's execd was not reached")
			assert.True(t, f.alive("s1"), "the subject's DELETE did not reach the server's sandbox")
			ids, pag := listIDs(t, call(t, "GET", base+"/v1/sandboxes?pageSize=10", ""))
			assert.Equal(t, []string{"s2"}, ids, "a list leaves the vanished sandbox out")
			assert.Equal(t, 1.0, pag["totalItems"])
			assert.Equal(t, http.StatusOK, call(t, "GET", base+"/v1/sandboxes/s2", "").status, "the run's other sandbox is untouched")

			var after []string
			for _, c := range append(p.Calls(), p.EndpointCalls()...) {
				if c.SandboxID == "s1" && c.Status == http.StatusNotFound {
					after = append(after, c.Method+" "+c.Path)
				}
			}
			sort.Strings(after)
			assert.Equal(t, []string{"DELETE /v1/sandboxes/s1", "GET /v1/sandboxes/s1", "GET /v1/sandboxes/s1/endpoints/44772",
				"GET /v1/sandboxes/s1/proxy/44772/ping", "POST /sandboxes/s1/proxy/44772/command"}, after, "recorded with the id asked for")
		})
	}
}

// TestCommandOf reads an execd command request's command line from the
// body as it is forwarded, and leaves the body whole.
func TestCommandOf(t *testing.T) {
	body := `{"command":"python3 -m pip install tabulate","envs":{"TOKEN":"secret"}}`
	tee := newBodyTee(io.NopCloser(strings.NewReader(body)))
	rest, _ := io.ReadAll(tee)
	if string(rest) != body {
		t.Errorf("body through the tee = %q", rest)
	}
	kept, whole := tee.finish(func() func() { t.Error("a body read to its end needs no deadline"); return func() {} })
	if got := commandIn(kept, !whole); got != "python3 -m pip install tabulate" {
		t.Errorf("commandIn = %q", got)
	}
	// A body the transport never read (the server answered first) is read
	// by finish, and the transport reads no more after it.
	unread := newBodyTee(io.NopCloser(strings.NewReader(body)))
	kept, whole = unread.finish(func() func() { return func() {} })
	if got := commandIn(kept, !whole); got != "python3 -m pip install tabulate" || !whole {
		t.Errorf("an unread body gave %q (whole %v)", got, whole)
	}
	if n, err := unread.Read(make([]byte, 8)); n != 0 || err == nil {
		t.Errorf("a read after finish gave %d, %v", n, err)
	}
	if got := commandIn([]byte("not json"), false); got != "" {
		t.Errorf("commandIn(not json) = %q", got)
	}
	big := newBodyTee(io.NopCloser(strings.NewReader(`{"command":"` + strings.Repeat("x", maxBody) + `"}`)))
	_, _ = io.ReadAll(big)
	if kept, whole := big.finish(func() func() { return func() {} }); commandIn(kept, !whole) != "" || whole || !big.over {
		t.Errorf("an over-long body gave %q (over %v)", commandIn(kept, !whole), big.over)
	}
}

// A Credential Vault write sent through a sandbox's endpoint reaches the
// sidecar whole and is recorded with every secret value as a fingerprint
// only: the vault check on a real target reads it (harness/vaultcheck).
func TestVaultWriteRecordedWithoutItsSecret(t *testing.T) {
	f := newFakeOSB(t)
	p, err := StartFor(f.srv.URL, NewView())
	require.NoError(t, err)
	defer p.Close()
	a := call(t, "POST", "http://"+p.Domain()+"/v1/sandboxes", `{"image":{"uri":"python:3.12"},"metadata":{"want-id":"v1"}}`)
	require.Equal(t, http.StatusAccepted, a.status, a.body)
	body := `{"credentials":[{"name":"data-api","source":{"type":"inline","value":"capstone-data-secret-0123"}}],"bindings":[{"name":"data-api","match":{"hosts":["data-api.capstone.test"]},"auth":{"type":"bearer","credential":"data-api"}}]}`
	ep := call(t, "GET", "http://"+p.Domain()+"/v1/sandboxes/v1/endpoints/18080", "")
	require.Equal(t, http.StatusOK, ep.status, ep.body)
	var e struct {
		Endpoint string `json:"endpoint"`
	}
	require.NoError(t, json.Unmarshal([]byte(ep.body), &e))
	got := call(t, "POST", "http://"+e.Endpoint+"/credential-vault", body)
	assert.Equal(t, "execd of v1: POST /proxy/18080/credential-vault", got.body, "forwarded to the sandbox's endpoint")
	call(t, "POST", "http://"+e.Endpoint+"/policy", `{"value":"not a vault write"}`)
	var vault, policy *Call
	for _, c := range p.EndpointCalls() {
		switch {
		case strings.HasSuffix(c.Path, "/credential-vault"):
			vault = &c
		case strings.HasSuffix(c.Path, "/policy"):
			policy = &c
		}
	}
	require.NotNil(t, vault)
	assert.NotContains(t, string(vault.Body), "capstone-data-secret-0123", "the secret is never recorded")
	assert.Contains(t, string(vault.Body), `"value":"fingerprint:`+Fingerprint("capstone-data-secret-0123")+`"`)
	assert.Contains(t, string(vault.Body), `"hosts":["data-api.capstone.test"]`)
	require.NotNil(t, policy)
	assert.Empty(t, policy.Body, "only vault writes keep their body")
	assert.Nil(t, redactVault([]byte("not json")))
}

// TestVaultWriteRecordedWhenTheServerAnswersFirst: a vault write whose
// server answers before reading its body (the transport sends a body after
// the header, in its own goroutine) is recorded with its whole body, and is
// not visible before it is. The client here sends its body only once it has
// the answer, so the transport cannot have read it: before the fix the
// call was recorded with no body (TestVaultWriteRecordedWithoutItsSecret
// failed that way about 2 runs in 30 on a loaded machine).
func TestVaultWriteRecordedWhenTheServerAnswersFirst(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "ok")
	}))
	defer func() { up.CloseClientConnections(); up.Close() }()
	p, err := Start(up.URL)
	require.NoError(t, err)
	defer p.Close()

	body := `{"credentials":[{"name":"data-api","source":{"type":"inline","value":"capstone-data-secret-0123"}}]}`
	c, err := net.Dial("tcp", p.Domain())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	fmt.Fprintf(c, "POST /sandboxes/sb-1/proxy/18080/credential-vault HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "the server answers before the body is sent")
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(b))
	assert.Empty(t, p.CallsSoFar(), "not visible before its body is recorded")
	fmt.Fprint(c, body)
	calls := p.EndpointCalls()
	require.Len(t, calls, 1)
	assert.Equal(t, `{"credentials":[{"name":"data-api","source":{"type":"inline","value":"fingerprint:`+Fingerprint("capstone-data-secret-0123")+`"}}]}`, string(calls[0].Body))
}

// The views of one class learn whose sandbox is whose from the create answers
// their proxies relay (what a box's guard asks on a real target): a
// submission's own sandbox is its, a classmate's is not, an id no view
// created (made up, or the harness's own) is left to the server's answer.
func TestClassViewsTellWhoseSandbox(t *testing.T) {
	f := newFakeOSB(t)
	class := NewClass()
	viewA, viewB := class.NewView(), class.NewView()
	runA, err := StartFor(f.srv.URL, viewA)
	require.NoError(t, err)
	defer runA.Close()
	runB, err := StartFor(f.srv.URL+"/v1", viewB)
	require.NoError(t, err)
	defer runB.Close()
	f.create("harness-own")
	for _, c := range []struct {
		p  *Proxy
		id string
	}{{runA, "a1"}, {runB, "b1"}} {
		a := call(t, "POST", "http://"+c.p.Domain()+"/v1/sandboxes", fmt.Sprintf(`{"image":{"uri":"python:3.12"},"metadata":{"want-id":%q}}`, c.id))
		require.Equal(t, http.StatusAccepted, a.status, a.body)
	}
	// A create the server refused adds nothing.
	refuser := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"id":"refused-1"}`))
	}))
	defer refuser.Close()
	refusedB, err := StartFor(refuser.URL, viewB)
	require.NoError(t, err)
	defer refusedB.Close()
	a := call(t, "POST", "http://"+refusedB.Domain()+"/v1/sandboxes", `{"metadata":{"want-id":"refused-1"}}`)
	require.Equal(t, http.StatusBadRequest, a.status)

	assert.True(t, viewA.Mine("a1"))
	assert.False(t, viewA.Mine("b1"), "a classmate's sandbox")
	assert.True(t, viewB.Mine("b1"))
	assert.False(t, viewB.Mine("a1"), "a classmate's sandbox")
	for _, id := range []string{"harness-own", "made-up", "refused-1"} {
		assert.True(t, viewA.Mine(id), "%s: no view created it; the server answers for it", id)
		assert.True(t, viewB.Mine(id), id)
	}
	// A view outside any class knows no classmates.
	alone := NewView()
	assert.True(t, alone.Mine("a1"))
}
