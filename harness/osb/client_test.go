package osb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testKey = "secret-api-key-123"

// fake is a tiny lifecycle + execd + egress + admin server for the client tests.
type fake struct {
	mu       sync.Mutex
	seen     []*http.Request
	bodies   []string
	uploaded map[string][]byte
	metaFN   []string
}

func (f *fake) handler() http.Handler {
	mux := http.NewServeMux()
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Request-ID", "0123456789abcdef0123456789abcdef")
			switch r.Header.Get(HeaderAPIKey) {
			case "":
				writeJSON(w, 401, map[string]string{"code": "MISSING_API_KEY", "message": "missing"})
				return
			case testKey:
			default:
				writeJSON(w, 401, map[string]string{"code": "INVALID_API_KEY", "message": "invalid"})
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("POST /v1/sandboxes", auth(func(w http.ResponseWriter, r *http.Request) {
		var req CreateSandboxRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ResourceLimits == nil {
			writeJSON(w, 422, map[string]any{"detail": []map[string]any{{"type": "missing", "loc": []any{"body", "resourceLimits"}, "msg": "Field required"}}})
			return
		}
		writeJSON(w, 202, map[string]any{"id": "sb-1", "status": map[string]string{"state": "Running"}, "createdAt": "2026-11-29T06:48:55.599805Z", "entrypoint": req.Entrypoint})
	}))
	mux.HandleFunc("GET /v1/sandboxes/{id}", auth(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, map[string]string{"code": "DOCKER::SANDBOX_NOT_FOUND", "message": "no " + r.PathValue("id")})
	}))
	mux.HandleFunc("GET /v1/sandboxes", auth(func(w http.ResponseWriter, r *http.Request) {
		f.note(r, r.URL.RawQuery)
		writeJSON(w, 200, map[string]any{"items": []any{}, "pagination": map[string]any{"page": 1, "pageSize": 20, "totalItems": 0, "totalPages": 0, "hasNextPage": false}})
	}))
	mux.HandleFunc("DELETE /v1/sandboxes/{id}", auth(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	mux.HandleFunc("POST /v1/sandboxes/{id}/pause", auth(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(202) }))
	mux.HandleFunc("POST /v1/sandboxes/{id}/renew-expiration", auth(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.note(r, string(b))
		var in map[string]string
		_ = json.Unmarshal(b, &in)
		writeJSON(w, 200, map[string]string{"expiresAt": in["expiresAt"]})
	}))
	mux.HandleFunc("GET /v1/sandboxes/{id}/endpoints/{port}", auth(func(w http.ResponseWriter, r *http.Request) {
		f.note(r, r.URL.RawQuery)
		host := r.Host
		if r.PathValue("port") == "18080" {
			writeJSON(w, 200, map[string]any{"endpoint": host + "/proxy/18080", "headers": map[string]string{HeaderEgressAuth: "egress-token-xyz"}})
			return
		}
		writeJSON(w, 200, map[string]any{"endpoint": host + "/proxy/44772"})
	}))
	// execd under /proxy/44772
	mux.HandleFunc("GET /proxy/44772/ping", func(w http.ResponseWriter, r *http.Request) { f.note(r, ""); w.WriteHeader(200) })
	mux.HandleFunc("POST /proxy/44772/command", func(w http.ResponseWriter, r *http.Request) {
		var req CommandRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.note(r, req.Command)
		if req.Cwd == "/nope" {
			writeJSON(w, 400, map[string]string{"code": "INVALID_REQUEST_BODY", "message": "cwd"})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprintf(w, `{"type":"init","text":"c1","timestamp":1}`+"\n\n")
		fmt.Fprintf(w, `{"type":"stdout","text":"2","timestamp":2}`+"\n\n")
		if strings.Contains(req.Command, "fail") {
			fmt.Fprintf(w, `{"type":"stderr","text":"Traceback (most recent call last):","timestamp":3}`+"\n\n")
			fmt.Fprintf(w, `{"type":"error","error":{"ename":"CommandExecError","evalue":"1","traceback":["exit status 1"]},"timestamp":4}`+"\n\n")
			return
		}
		fmt.Fprintf(w, `{"type":"execution_complete","execution_time":5,"timestamp":4}`+"\n\n")
	})
	mux.HandleFunc("GET /proxy/44772/command/status/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"id": r.PathValue("id"), "running": false, "exit_code": 0, "started_at": "t"})
	})
	mux.HandleFunc("GET /proxy/44772/command/{id}/{what}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(HeaderTailCursor, "3")
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "a\nb\nc\n")
	})
	mux.HandleFunc("DELETE /proxy/44772/command", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 500, map[string]string{"code": "RUNTIME_ERROR", "message": "no such command " + r.URL.Query().Get("id")})
	})
	mux.HandleFunc("POST /proxy/44772/files/upload", func(w http.ResponseWriter, r *http.Request) {
		f.note(r, "")
		mr, err := r.MultipartReader()
		if err != nil {
			writeJSON(w, 400, map[string]string{"code": "INVALID_FILE", "message": err.Error()})
			return
		}
		var path string
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				writeJSON(w, 400, map[string]string{"code": "INVALID_FILE", "message": err.Error()})
				return
			}
			switch p.FormName() {
			case "metadata":
				f.mu.Lock()
				f.metaFN = append(f.metaFN, p.FileName())
				f.mu.Unlock()
				var m uploadMeta
				_ = json.NewDecoder(p).Decode(&m)
				path = m.Path
			case "file":
				h := sha256.New()
				var keep bytes.Buffer
				n, _ := io.Copy(io.MultiWriter(h, &limitedBuf{b: &keep, max: 1 << 20}), p)
				f.mu.Lock()
				if f.uploaded == nil {
					f.uploaded = map[string][]byte{}
				}
				f.uploaded[path] = keep.Bytes()
				f.uploaded[path+"#sha"] = []byte(hex.EncodeToString(h.Sum(nil)))
				f.uploaded[path+"#n"] = []byte(fmt.Sprint(n))
				f.mu.Unlock()
			}
		}
		w.WriteHeader(200)
	})
	mux.HandleFunc("GET /proxy/44772/files/download", func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Query().Get("path")
		f.mu.Lock()
		b, ok := f.uploaded[p]
		f.mu.Unlock()
		if !ok {
			writeJSON(w, 404, map[string]string{"code": "FILE_NOT_FOUND", "message": "file not found: " + p})
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(b)
	})
	mux.HandleFunc("GET /proxy/44772/files/info", func(w http.ResponseWriter, r *http.Request) {
		out := map[string]FileInfo{}
		for _, p := range r.URL.Query()["path"] {
			out[p] = FileInfo{Path: p, Type: "file", Size: 3, Mode: 644}
		}
		writeJSON(w, 200, out)
	})
	// egress under /proxy/18080
	mux.HandleFunc("/proxy/18080/policy", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.note(r, string(b))
		if r.Header.Get(HeaderEgressAuth) != "egress-token-xyz" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(401)
			io.WriteString(w, "unauthorized\n")
			return
		}
		writeJSON(w, 200, map[string]any{"status": "ok", "mode": "enforcing", "enforcementMode": "dns", "policy": map[string]any{"defaultAction": "deny", "egress": []any{map[string]string{"action": "allow", "target": "pypi.org"}}}})
	})
	mux.HandleFunc("POST /proxy/18080/credential-vault", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.note(r, string(b))
		writeJSON(w, 201, map[string]any{"revision": 1, "credentials": []any{map[string]any{"name": "data", "sourceType": "inline"}}, "bindings": []any{}})
	})
	// admin
	mux.HandleFunc("/_mock/", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.note(r, string(b))
		if r.Header.Get(HeaderAdminToken) != "admin-tok-1" {
			writeJSON(w, 401, map[string]string{"code": "ADMIN_UNAUTHORIZED", "message": "bad token"})
			return
		}
		switch {
		case r.URL.Path == "/_mock/info":
			writeJSON(w, 200, map[string]any{"version": "t", "isolation": map[string]any{"enforced": true}, "limits": map[string]bool{"memory": true}, "snapshots": "not_implemented"})
		case r.URL.Path == "/_mock/audit":
			writeJSON(w, 200, map[string]any{"events": []any{
				map[string]any{"seq": 0, "kind": "lifecycle", "lifecycle": map[string]any{"method": "POST", "path": "/v1/sandboxes", "status": 202,
					"body": []byte(`{"image":{"uri":"python:3.12"}}`)}}, // a Go []byte: base64 on the wire
				map[string]any{"seq": 0, "kind": "lifecycle", "lifecycle": map[string]any{"method": "POST", "path": "/v1/sandboxes", "status": 202,
					"body": json.RawMessage(`{"image":{"uri":"x"}}`)}},
				map[string]any{"seq": 1, "time": "2026-11-29T06:48:55Z", "sandbox_id": "sb-1", "kind": "command", "command": map[string]any{"id": "c1", "command": "echo", "exit_code": 0, "started_at": "2026-11-29T06:48:55Z"}}}})
		case strings.HasSuffix(r.URL.Path, "/canary-scan"):
			writeJSON(w, 200, map[string]any{"findings": []any{map[string]string{"label": "k", "location": "env", "where": "TOKEN"}}})
		case r.URL.Path == "/_mock/sandboxes":
			writeJSON(w, 200, map[string]any{"sandboxes": []any{map[string]any{"id": "sb-1", "deleted": true, "extra": 1}}})
		default:
			w.WriteHeader(204)
		}
	})
	return mux
}

type limitedBuf struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuf) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}

func (f *fake) note(r *http.Request, body string) {
	f.mu.Lock()
	f.seen = append(f.seen, r)
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func newTestClient(t *testing.T) (*Client, *fake, *MemoryTranscript) {
	t.Helper()
	f := &fake{}
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	tr := &MemoryTranscript{}
	c, err := New(strings.TrimPrefix(srv.URL, "http://"), testKey, WithTranscript(tr), WithAdminToken("admin-tok-1"))
	require.NoError(t, err)
	return c, f, tr
}

func TestNewDomainForms(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8080":             "http://127.0.0.1:8080",
		"127.0.0.1:8080/":            "http://127.0.0.1:8080",
		"https://127.0.0.1:8443/v1":  "https://127.0.0.1:8443",
		"127.0.0.1:8080/gateway/v1/": "http://127.0.0.1:8080/gateway",
	} {
		c, err := New(in, "")
		require.NoError(t, err, in)
		assert.Equal(t, want, c.BaseURL(), in)
	}
	_, err := New("", "k")
	assert.Error(t, err)
}

func TestLifecycleStatusesNeverHidden(t *testing.T) {
	c, _, tr := newTestClient(t)
	ctx := context.Background()
	timeout := 1200
	res, err := c.CreateSandbox(ctx, CreateSandboxRequest{
		Image: &ImageSpec{URI: "python:3.12"}, Entrypoint: []string{"tail", "-f", "/dev/null"},
		Timeout: &timeout, ResourceLimits: map[string]string{"cpu": "1"},
	})
	require.NoError(t, err)
	assert.Equal(t, 202, res.Status)
	assert.Equal(t, "HTTP/1.1 202 Accepted", res.StatusLine)
	assert.Equal(t, "POST /v1/sandboxes HTTP/1.1", res.RequestLine)
	assert.True(t, res.Decoded)
	assert.Equal(t, "sb-1", res.Value.ID)
	assert.Equal(t, "Running", res.Value.Status.State)
	assert.Equal(t, "0123456789abcdef0123456789abcdef", res.RequestID())

	// 422 validation body shape
	res, err = c.CreateSandbox(ctx, CreateSandboxRequest{Image: &ImageSpec{URI: "x"}})
	require.NoError(t, err)
	assert.Equal(t, 422, res.Status)
	assert.False(t, res.Decoded)
	ae := res.APIError()
	require.NotNil(t, ae)
	assert.Equal(t, "validation", ae.Shape)
	assert.Equal(t, "Field required", ae.Detail[0].Msg)

	// 401 without key and with a wrong key
	r2, err := c.WithoutAPIKey().DeleteSandbox(ctx, "sb-1")
	require.NoError(t, err)
	assert.Equal(t, 401, r2.Status)
	assert.Equal(t, "MISSING_API_KEY", r2.APIError().Code)
	r2, err = c.WithAPIKey("wrong-key-0000").DeleteSandbox(ctx, "sb-1")
	require.NoError(t, err)
	assert.Equal(t, "INVALID_API_KEY", r2.APIError().Code)

	r2, err = c.DeleteSandbox(ctx, "sb-1")
	require.NoError(t, err)
	assert.Equal(t, 204, r2.Status)
	assert.True(t, r2.Decoded)

	g, err := c.GetSandbox(ctx, "sb-1")
	require.NoError(t, err)
	assert.Equal(t, 404, g.Status)
	assert.Equal(t, "DOCKER::SANDBOX_NOT_FOUND", g.APIError().Code)

	p, err := c.PauseSandbox(ctx, "sb-1")
	require.NoError(t, err)
	assert.Equal(t, 202, p.Status)

	// resume and metadata patch (a nil value is sent as JSON null = delete)
	rs, err := c.ResumeSandbox(ctx, "sb-1")
	require.NoError(t, err)
	assert.Equal(t, 404, rs.Status, "the fake has no resume route: the 404 is reported, not hidden")
	v := "x"
	pm, err := c.PatchMetadata(ctx, "sb-1", map[string]*string{"keep": &v, "drop": nil})
	require.NoError(t, err)
	assert.Equal(t, 404, pm.Status)

	// the transcript has every exchange, and the key never appears
	ex := tr.Exchanges()
	require.Len(t, ex, 9)
	assert.Equal(t, `{"drop":null,"keep":"x"}`, ex[8].RequestBody)
	for _, e := range ex {
		s := e.String()
		assert.NotContains(t, s, testKey)
		assert.NotContains(t, s, "wrong-key-0000")
	}
	assert.Equal(t, "[REDACTED]", ex[0].RequestHeaders[HeaderAPIKey])
	assert.Equal(t, 202, ex[0].Status)
	assert.Contains(t, ex[0].RequestBody, `"python:3.12"`)
	_, hasKey := ex[2].RequestHeaders[HeaderAPIKey]
	assert.False(t, hasKey, "no key header at all on the keyless call")
}

func TestListRenewEndpointQueries(t *testing.T) {
	c, f, _ := newTestClient(t)
	ctx := context.Background()
	l, err := c.ListSandboxes(ctx, ListOptions{States: []string{"Running", "paused"}, Metadata: map[string]string{"a": "1", "b": "2"}, PageSize: 200})
	require.NoError(t, err)
	assert.Equal(t, 200, l.Status)
	assert.Equal(t, 0, l.Value.Pagination.TotalPages)
	assert.Equal(t, "metadata=a%3D1%26b%3D2&pageSize=200&state=Running&state=paused", f.bodies[0])

	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	rn, err := c.RenewExpiration(ctx, "sb-1", at)
	require.NoError(t, err)
	assert.Equal(t, "2030-01-02T03:04:05Z", rn.Value.ExpiresAt)

	ep, err := c.GetEndpoint(ctx, "sb-1", 44772, false)
	require.NoError(t, err)
	assert.Equal(t, "use_server_proxy=false", f.bodies[2])
	assert.NotContains(t, ep.Value.Endpoint, "://")
	assert.True(t, strings.HasSuffix(ep.Value.Endpoint, "/proxy/44772"))
}

func TestExecdRunThroughPathEndpoint(t *testing.T) {
	c, f, tr := newTestClient(t)
	ctx := context.Background()
	ep, err := c.GetEndpoint(ctx, "sb-1", 44772, false)
	require.NoError(t, err)
	ep.Value.Headers = map[string]string{"X-Route": "r1"}
	e, err := c.Execd(ep.Value)
	require.NoError(t, err)

	p, err := e.Ping(ctx)
	require.NoError(t, err)
	assert.Equal(t, 200, p.Status)
	ok, rd := e.WaitReady(ctx, 10*time.Millisecond, time.Second)
	assert.True(t, ok)
	assert.Equal(t, 1, rd.Attempts)

	r, err := e.Run(ctx, CommandRequest{Command: `python3 -c "print(1+1)"`, TimeoutMs: 5000})
	require.NoError(t, err)
	assert.Equal(t, 200, r.Status)
	assert.True(t, r.Decoded)
	assert.Equal(t, []string{"2"}, r.Value.Stdout)
	require.NotNil(t, r.Value.ExitCode)
	assert.Equal(t, 0, *r.Value.ExitCode)
	assert.Contains(t, string(r.Body), `"init"`)

	r, err = e.Run(ctx, CommandRequest{Command: "fail"})
	require.NoError(t, err)
	assert.Equal(t, 1, *r.Value.ExitCode)
	assert.Equal(t, "Traceback (most recent call last):\n", r.Value.StderrText())

	r, err = e.Run(ctx, CommandRequest{Command: "x", Cwd: "/nope"})
	require.NoError(t, err)
	assert.Equal(t, 400, r.Status)
	assert.False(t, r.Decoded)
	assert.Equal(t, "INVALID_REQUEST_BODY", r.APIError().Code)

	// endpoint headers on every execd request, never the API key
	f.mu.Lock()
	for _, req := range f.seen[2:] {
		assert.Equal(t, "r1", req.Header.Get("X-Route"), req.URL.Path)
		assert.Empty(t, req.Header.Get(HeaderAPIKey), req.URL.Path)
	}
	assert.Equal(t, "text/event-stream", f.seen[3].Header.Get("Accept"))
	f.mu.Unlock()
	ex := tr.Exchanges()
	assert.Equal(t, "execd", ex[len(ex)-1].Target)

	bg, err := e.Run(ctx, CommandRequest{Command: "sleep 1", Background: true})
	require.NoError(t, err)
	assert.Equal(t, "c1", bg.Value.ID)
	assert.Nil(t, bg.Value.ExitCode, "a background run has no exit code in its stream")

	st, err := e.CommandStatus(ctx, "c1")
	require.NoError(t, err)
	assert.False(t, st.Value.Running)
	assert.Equal(t, 0, *st.Value.ExitCode)
	lg, err := e.CommandLogs(ctx, "c1", 0)
	require.NoError(t, err)
	assert.Equal(t, 3, lg.Value.Cursor)
	assert.Equal(t, "a\nb\nc\n", lg.Value.Text)
	in, err := e.Interrupt(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, 500, in.Status)
	assert.Equal(t, "RUNTIME_ERROR", in.APIError().Code)
}

func TestUploadDownloadRoundTrip(t *testing.T) {
	c, f, tr := newTestClient(t)
	ctx := context.Background()
	e, err := c.ExecdAt(strings.TrimPrefix(c.BaseURL(), "http://")+"/proxy/44772", nil)
	require.NoError(t, err)
	content := strings.Repeat("a,b\n1,2\n", 1000)
	up, err := e.Upload(ctx,
		UploadFile{Path: "/workspace/input.csv", Content: strings.NewReader(content), Mode: 644},
		UploadFile{Path: "/workspace/analyze.py", Content: strings.NewReader("print(1)\n")})
	require.NoError(t, err)
	assert.Equal(t, 200, up.Status)
	require.Len(t, up.Value.Files, 2)
	sum := sha256.Sum256([]byte(content))
	assert.Equal(t, hex.EncodeToString(sum[:]), up.Value.Files[0].SHA256)
	assert.EqualValues(t, len(content), up.Value.Files[0].Size)
	f.mu.Lock()
	assert.Equal(t, []string{"metadata", "metadata"}, f.metaFN, "metadata part must carry a filename")
	assert.Equal(t, hex.EncodeToString(sum[:]), string(f.uploaded["/workspace/input.csv#sha"]))
	f.mu.Unlock()

	var buf bytes.Buffer
	dl, err := e.Download(ctx, "/workspace/input.csv", &buf)
	require.NoError(t, err)
	assert.Equal(t, 200, dl.Status)
	assert.Equal(t, content, buf.String())
	assert.Equal(t, hex.EncodeToString(sum[:]), dl.Value.SHA256)
	assert.EqualValues(t, len(content), dl.Value.Size)
	assert.Empty(t, dl.Body, "a successful download's bytes go to the writer only")

	buf.Reset()
	dl, err = e.Download(ctx, "/workspace/missing", &buf)
	require.NoError(t, err)
	assert.Equal(t, 404, dl.Status)
	assert.False(t, dl.Decoded)
	assert.Zero(t, buf.Len())
	assert.Equal(t, "FILE_NOT_FOUND", dl.APIError().Code)

	raw, err := e.Do(ctx, RawRequest{Method: "GET", Path: "/files/info", Query: map[string][]string{"path": {"/a"}}, Headers: map[string]string{"X-Extra": "1"}})
	require.NoError(t, err)
	assert.Equal(t, 200, raw.Status)
	assert.JSONEq(t, `{"/a":{"path":"/a","type":"file","size":3,"mode":644}}`, string(raw.Value))

	info, err := e.Info(ctx, "/workspace/input.csv")
	require.NoError(t, err)
	assert.Equal(t, 644, info.Value["/workspace/input.csv"].Mode)

	ex := tr.Exchanges()
	assert.Equal(t, "execd", ex[3].Target)
	assert.Contains(t, ex[0].RequestBody, "/workspace/input.csv")
	assert.NotContains(t, ex[0].RequestBody, "a,b", "upload bytes are not copied into the transcript")
	assert.Contains(t, ex[1].ResponseBody, "bytes streamed")
}

// endlessReader yields n bytes of a repeating pattern without allocating them.
type endlessReader struct{ n, off int64 }

func (r *endlessReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n-r.off {
		p = p[:r.n-r.off]
	}
	for i := range p {
		p[i] = "0123456789,\n"[(r.off+int64(i))%12]
	}
	r.off += int64(len(p))
	return len(p), nil
}

func TestUploadIsStreamed(t *testing.T) {
	c, f, _ := newTestClient(t)
	e, err := c.ExecdAt(strings.TrimPrefix(c.BaseURL(), "http://")+"/proxy/44772", nil)
	require.NoError(t, err)
	const size = 20 << 20
	up, err := e.Upload(context.Background(), UploadFile{Path: "/workspace/big.csv", Content: &endlessReader{n: size}})
	require.NoError(t, err)
	assert.Equal(t, 200, up.Status)
	assert.EqualValues(t, size, up.Value.Files[0].Size)
	f.mu.Lock()
	assert.Equal(t, fmt.Sprint(size), string(f.uploaded["/workspace/big.csv#n"]))
	assert.Equal(t, up.Value.Files[0].SHA256, string(f.uploaded["/workspace/big.csv#sha"]))
	f.mu.Unlock()
}

func TestEgressAndVault(t *testing.T) {
	c, f, tr := newTestClient(t)
	ctx := context.Background()
	ep, err := c.GetEndpoint(ctx, "sb-1", 18080, false)
	require.NoError(t, err)
	g, err := c.Egress(ep.Value)
	require.NoError(t, err)
	pol, err := g.GetPolicy(ctx)
	require.NoError(t, err)
	assert.Equal(t, 200, pol.Status)
	assert.Equal(t, "deny", pol.Value.Policy.DefaultAction)

	pr, err := g.PatchPolicy(ctx, []NetworkRule{{Action: "deny", Target: "pypi.org"}})
	require.NoError(t, err)
	assert.Equal(t, 200, pr.Status)

	raw, err := g.Do(ctx, RawRequest{Method: "GET", Path: "/policy"})
	require.NoError(t, err)
	assert.Equal(t, 200, raw.Status)
	assert.Contains(t, string(raw.Value), `"enforcing"`)

	un, err := g.WithHeaders(nil).GetPolicy(ctx)
	require.NoError(t, err)
	assert.Equal(t, 401, un.Status)
	assert.Equal(t, "text", un.APIError().Shape)
	assert.Equal(t, "unauthorized", un.APIError().Message)

	v, err := g.CreateVault(ctx, VaultCreate{
		Credentials: []VaultCredential{{Name: "data", Source: VaultCredentialSrc{Type: "inline", Value: "real-token-SECRET"}}},
		Bindings: []VaultBinding{{Name: "data", Match: VaultMatch{Hosts: []string{"data.capstone.test"}},
			Auth: VaultAuth{Type: "bearer", Credential: "data"}}},
	})
	require.NoError(t, err)
	assert.Equal(t, 201, v.Status)
	assert.EqualValues(t, 1, v.Value.Revision)

	f.mu.Lock()
	assert.Equal(t, `[{"action":"deny","target":"pypi.org"}]`, f.bodies[2])
	assert.Contains(t, f.bodies[len(f.bodies)-1], "real-token-SECRET", "the server does get the secret")
	f.mu.Unlock()
	for _, e := range tr.Exchanges() {
		assert.NotContains(t, e.String(), "real-token-SECRET")
		assert.NotContains(t, e.String(), "egress-token-xyz")
	}
}

func TestAdmin(t *testing.T) {
	c, f, _ := newTestClient(t)
	ctx := context.Background()
	a := c.Admin()
	info, err := a.Info(ctx)
	require.NoError(t, err)
	assert.True(t, info.Value.Isolation.Enforced)
	assert.Equal(t, "not_implemented", info.Value.Snapshots)

	au, err := a.Audit(ctx, AuditQuery{SandboxID: "sb-1", Kind: "command", Since: 5})
	require.NoError(t, err)
	require.Len(t, au.Value.Events, 3)
	assert.JSONEq(t, `{"image":{"uri":"python:3.12"}}`, string(au.Value.Events[0].Lifecycle.Body), "base64 body decoded to its JSON")
	assert.JSONEq(t, `{"image":{"uri":"x"}}`, string(au.Value.Events[1].Lifecycle.Body), "raw JSON body kept")
	assert.Equal(t, "c1", au.Value.Events[2].Command.ID)
	f.mu.Lock()
	assert.Equal(t, "kind=command&sandbox_id=sb-1&since=5", f.seen[1].URL.RawQuery)
	f.mu.Unlock()

	ex, err := a.Expire(ctx, "sb-1")
	require.NoError(t, err)
	assert.Equal(t, 204, ex.Status)
	d, err := a.EgressDeny(ctx, []string{"pypi.org", "*.pythonhosted.org"})
	require.NoError(t, err)
	assert.Equal(t, 204, d.Status)
	_, err = a.ClearEgressDeny(ctx)
	require.NoError(t, err)
	_, err = a.PutCanaries(ctx, map[string]string{"tok": "canary-value-1"})
	require.NoError(t, err)
	cs, err := a.CanaryScan(ctx, "sb-1")
	require.NoError(t, err)
	assert.Equal(t, "TOKEN", cs.Value.Findings[0].Where)
	sbs, err := a.Sandboxes(ctx)
	require.NoError(t, err)
	require.Len(t, sbs.Value.Sandboxes, 1)
	assert.True(t, sbs.Value.Sandboxes[0].Deleted)
	assert.Contains(t, string(sbs.Value.Sandboxes[0].Raw), "extra")

	f.mu.Lock()
	assert.Equal(t, `{"targets":["pypi.org","*.pythonhosted.org"]}`, f.bodies[3])
	assert.Equal(t, "DELETE", f.seen[4].Method)
	f.mu.Unlock()

	_, err = a.CapacityFault(ctx, 2)
	require.NoError(t, err)
	_, err = a.ClearCapacityFault(ctx)
	require.NoError(t, err)
	f.mu.Lock()
	last := len(f.seen) - 1
	assert.Equal(t, "POST", f.seen[last-1].Method)
	assert.Equal(t, "/_mock/faults/capacity", f.seen[last-1].URL.Path)
	assert.Equal(t, `{"retry_after_seconds":2}`, f.bodies[last-1])
	assert.Equal(t, "DELETE", f.seen[last].Method)
	f.mu.Unlock()

	_, err = a.Audit(ctx, AuditQuery{Key: "0123456789ab", Since: 7})
	require.NoError(t, err)
	f.mu.Lock()
	assert.Equal(t, "key_fingerprint=0123456789ab&since=7", f.seen[len(f.seen)-1].URL.RawQuery)
	f.mu.Unlock()
	_, err = a.CapacityFaultForKey(ctx, "0123456789ab", 2)
	require.NoError(t, err)
	_, err = a.ClearCapacityFaultForKey(ctx, "0123456789ab")
	require.NoError(t, err)
	f.mu.Lock()
	last = len(f.seen) - 1
	assert.JSONEq(t, `{"retry_after_seconds":2,"key_fingerprint":"0123456789ab"}`, f.bodies[last-1])
	assert.Equal(t, "DELETE", f.seen[last].Method)
	assert.Equal(t, "key_fingerprint=0123456789ab", f.seen[last].URL.RawQuery)
	f.mu.Unlock()
	// Any keyed fault, by name: the body every keyed fault takes.
	_, err = a.FaultForKey(ctx, "disk-full", "0123456789ab", map[string]any{"bytes": 4096, "key_fingerprint": "ignored"})
	require.NoError(t, err)
	_, err = a.ClearFaultForKey(ctx, "disk-full", "0123456789ab")
	require.NoError(t, err)
	f.mu.Lock()
	last = len(f.seen) - 1
	assert.Equal(t, "POST", f.seen[last-1].Method)
	assert.Equal(t, "/_mock/faults/disk-full", f.seen[last-1].URL.Path)
	assert.JSONEq(t, `{"bytes":4096,"key_fingerprint":"0123456789ab"}`, f.bodies[last-1])
	assert.Equal(t, "DELETE", f.seen[last].Method)
	assert.Equal(t, "/_mock/faults/disk-full", f.seen[last].URL.Path)
	assert.Equal(t, "key_fingerprint=0123456789ab", f.seen[last].URL.RawQuery)
	f.mu.Unlock()
	_, err = a.EgressDenyForKey(ctx, "0123456789ab", []string{"pypi.org"})
	require.NoError(t, err)
	_, err = a.ClearEgressDenyForKey(ctx, "0123456789ab")
	require.NoError(t, err)
	f.mu.Lock()
	last = len(f.seen) - 1
	assert.JSONEq(t, `{"targets":["pypi.org"],"key_fingerprint":"0123456789ab"}`, f.bodies[last-1])
	assert.Equal(t, "/_mock/faults/egress-deny", f.seen[last].URL.Path)
	assert.Equal(t, "key_fingerprint=0123456789ab", f.seen[last].URL.RawQuery)
	f.mu.Unlock()

	c2, _ := New(strings.TrimPrefix(c.BaseURL(), "http://"), "")
	un, err := c2.Admin().Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, 401, un.Status)
}

func TestTransportErrorAndDecodeError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(202)
		io.WriteString(w, "not json")
	}))
	c, err := New(strings.TrimPrefix(srv.URL, "http://"), "k")
	require.NoError(t, err)
	res, err := c.CreateSandbox(context.Background(), CreateSandboxRequest{})
	require.Error(t, err, "decode errors are errors")
	assert.Equal(t, 202, res.Status, "…but the status is still there")
	assert.Equal(t, "not json", string(res.Body))
	srv.Close()
	res, err = c.CreateSandbox(context.Background(), CreateSandboxRequest{})
	require.Error(t, err)
	assert.Equal(t, 0, res.Status)
}

func TestWaitReadyTimesOut(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.WriteHeader(502)
	}))
	defer srv.Close()
	c, _ := New("127.0.0.1:1", "")
	e, err := c.ExecdAt(strings.TrimPrefix(srv.URL, "http://"), nil)
	require.NoError(t, err)
	ok, rd := e.WaitReady(context.Background(), 20*time.Millisecond, 200*time.Millisecond)
	assert.False(t, ok)
	assert.GreaterOrEqual(t, rd.Attempts, 3)
	assert.Equal(t, 502, rd.Last.Status)
}
