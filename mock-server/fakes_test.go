package mockserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/internal/answerfirst"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// ---- fake clock ------------------------------------------------------------

type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
	fired   bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 6, 48, 55, 599805000, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	active := !t.stopped && !t.fired
	t.stopped = true
	return active
}

// Advance moves time forward and runs (synchronously) every timer now due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.fired && !t.at.After(c.now) {
			t.fired = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// ---- fake runtime ------------------------------------------------------------

type fakeRuntime struct {
	t         *testing.T
	mu        sync.Mutex
	sandboxes []*fakeSandbox
	createErr error
	// network: Enforced()["network"], a network namespace per sandbox
	// (false: as insecure mode, the egress gateway is reached by proxy).
	network bool
}

func (f *fakeRuntime) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.createErr != nil {
		return nil, f.createErr
	}
	sb := newFakeSandbox(f.t, spec)
	f.sandboxes = append(f.sandboxes, sb)
	return sb, nil
}

func (f *fakeRuntime) Isolation() (bool, string) { return false, "fake runtime (tests)" }
func (f *fakeRuntime) Enforced() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return map[string]bool{"memory": false, "pids": false, "cpu": false, "network": f.network}
}
func (f *fakeRuntime) Reap() ([]string, error) { return nil, nil }
func (f *fakeRuntime) Close() error            { return nil }

func (f *fakeRuntime) byID(id string) *fakeSandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, sb := range f.sandboxes {
		if sb.spec.ID == id {
			return sb
		}
	}
	return nil
}

// fakeSandbox is a sandbox whose execd is an in-test HTTP server.
type fakeSandbox struct {
	spec runtime.Spec
	srv  *httptest.Server
	dir  string

	mu        sync.Mutex
	state     runtime.State
	paused    bool
	destroyed bool
	pids      []int
	files     map[string][]byte
	proxyReqs []proxiedRequest
	release   chan struct{} // the "slow" command waits on it between events
	clog      []byte        // the container log (ContainerLog), stamped lines
}

// ContainerLog is what the test wrote with logLine.
func (f *fakeSandbox) ContainerLog() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]byte(nil), f.clog...), nil
}

// logLine appends a container log line written at t, stamped as the agent
// stamps it.
func (f *fakeSandbox) logLine(t time.Time, line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clog = append(f.clog, t.UTC().Format("2006-01-02T15:04:05.000000000Z")+" "+line+"\n"...)
}

type proxiedRequest struct {
	Method  string
	Path    string
	Query   string
	Headers http.Header
	Body    string
}

func newFakeSandbox(t *testing.T, spec runtime.Spec) *fakeSandbox {
	dir := filepath.Join(t.TempDir(), spec.ID)
	for _, sub := range []string{"workspace", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sb := &fakeSandbox{spec: spec, dir: dir, files: map[string][]byte{}, release: make(chan struct{}),
		state: runtime.State{State: "Running", Reason: "CONTAINER_RUNNING"}}
	sb.srv = httptest.NewServer(sb.execdHandler())
	return sb
}

func (f *fakeSandbox) ID() string { return f.spec.ID }
func (f *fakeSandbox) DialExecd(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", f.srv.Listener.Addr().String())
}
func (f *fakeSandbox) State() runtime.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}
func (f *fakeSandbox) Pause() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = true
	return nil
}
func (f *fakeSandbox) Resume() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = false
	return nil
}
func (f *fakeSandbox) Destroy() error {
	f.mu.Lock()
	already := f.destroyed
	f.destroyed = true
	f.mu.Unlock()
	if !already {
		f.srv.CloseClientConnections()
		f.srv.Close()
	}
	return nil
}
func (f *fakeSandbox) Dir() string { return f.dir }
func (f *fakeSandbox) Pids() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.pids...)
}

func (f *fakeSandbox) isDestroyed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.destroyed
}

func (f *fakeSandbox) isPaused() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.paused
}

func (f *fakeSandbox) setState(st runtime.State) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = st
}

func (f *fakeSandbox) lastProxied() (proxiedRequest, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.proxyReqs) == 0 {
		return proxiedRequest{}, false
	}
	return f.proxyReqs[len(f.proxyReqs)-1], true
}

func sseFrame(w io.Writer, ev map[string]any) {
	ev["timestamp"] = time.Now().UnixMilli()
	b, _ := json.Marshal(ev)
	_, _ = fmt.Fprintf(w, "%s\n\n", b)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// execdHandler imitates the agent's execd closely enough for the proxy layer.
func (f *fakeSandbox) execdHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /command", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Command string `json:"command"`
			Cwd     string `json:"cwd"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Cwd == "/nonexistent" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"code":"INVALID_REQUEST_BODY","message":"cwd does not exist"}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		sseFrame(w, map[string]any{"type": "init", "text": "cmd-" + req.Command})
		switch {
		case req.Command == "fail":
			sseFrame(w, map[string]any{"type": "stderr", "text": "boom"})
			sseFrame(w, map[string]any{"type": "error", "error": map[string]any{"ename": "CommandExecError", "evalue": "3", "traceback": []string{"exit status 3"}}})
		case req.Command == "slow":
			sseFrame(w, map[string]any{"type": "stdout", "text": "first"})
			select {
			case <-f.release:
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
				return
			}
			sseFrame(w, map[string]any{"type": "stdout", "text": "second"})
			sseFrame(w, map[string]any{"type": "execution_complete", "execution_time": 5})
		case strings.HasPrefix(req.Command, "echo "):
			for _, line := range strings.Split(strings.TrimPrefix(req.Command, "echo "), "\n") {
				sseFrame(w, map[string]any{"type": "stdout", "text": line})
			}
			sseFrame(w, map[string]any{"type": "execution_complete", "execution_time": 1})
		default:
			sseFrame(w, map[string]any{"type": "execution_complete", "execution_time": 1})
		}
	})
	mux.HandleFunc("POST /files/upload", func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, `{"code":"INVALID_FILE","message":"not multipart"}`, http.StatusBadRequest)
			return
		}
		path := ""
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			if p.FormName() == "metadata" {
				var m struct{ Path string }
				_ = json.Unmarshal(b, &m)
				path = m.Path
			} else {
				f.mu.Lock()
				f.files[path] = b
				f.mu.Unlock()
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /files/download", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		b, ok := f.files[r.URL.Query().Get("path")]
		f.mu.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":"FILE_NOT_FOUND","message":"no such file"}`))
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("DELETE /files", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("/proxy/{port}/{path...}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("port") == "9999" {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("Bad Gateway"))
			return
		}
		if r.PathValue("path") == "answer-first" {
			answerfirst.Handler().ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.proxyReqs = append(f.proxyReqs, proxiedRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Headers: r.Header.Clone(), Body: string(body)})
		f.mu.Unlock()
		if r.PathValue("path") == "sse" {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			sseFrame(w, map[string]any{"type": "stdout", "text": "first"})
			select {
			case <-f.release:
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
				return
			}
			sseFrame(w, map[string]any{"type": "stdout", "text": "second"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"UNKNOWN","message":"no route"}`))
	})
	return mux
}

// ---- fake egress ---------------------------------------------------------------

type fakeEgress struct {
	mu       sync.Mutex
	attached map[string]json.RawMessage
	override []string
	closed   map[string]bool
	// sandboxOverride: per-sandbox deny targets
	sandboxOverride map[string][]string
}

func newFakeEgress() *fakeEgress {
	return &fakeEgress{attached: map[string]json.RawMessage{}, closed: map[string]bool{}}
}

func (e *fakeEgress) Attach(id string, policy json.RawMessage, credentialProxy bool) (EgressAttachment, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.attached[id] = policy
	return &fakeAttachment{e: e, id: id}, nil
}

func (e *fakeEgress) SetDenyOverride(targets []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.override = append([]string(nil), targets...)
	return nil
}

func (e *fakeEgress) ClearDenyOverride() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.override = nil
}

func (e *fakeEgress) SetSandboxDenyOverride(id string, targets []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range targets {
		if strings.ContainsAny(t, " /") {
			return fmt.Errorf("invalid target %q", t)
		}
	}
	if id == "" {
		return nil
	}
	if e.sandboxOverride == nil {
		e.sandboxOverride = map[string][]string{}
	}
	e.sandboxOverride[id] = append([]string(nil), targets...)
	return nil
}

func (e *fakeEgress) sandboxOverrideNow(id string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sandboxOverride[id]
}

func (e *fakeEgress) overrideNow() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.override
}

type fakeAttachment struct {
	e  *fakeEgress
	id string
}

func (a *fakeAttachment) SocketPath() string { return "/nonexistent/" + a.id + ".sock" }
func (a *fakeAttachment) Token() string      { return "egress-token-" + a.id[:8] }
func (a *fakeAttachment) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("OPENSANDBOX-EGRESS-AUTH") != a.Token() {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte("unauthorized"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"egress":true,"path":%q}`, r.URL.Path)
	})
}
func (a *fakeAttachment) SandboxFiles() map[string]string {
	return map[string]string{"/etc/ssl/certs/ca-certificates.crt": "/nonexistent/ca.pem"}
}
func (a *fakeAttachment) SandboxEnv() map[string]string {
	return map[string]string{"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"}
}
func (a *fakeAttachment) Close() error {
	a.e.mu.Lock()
	defer a.e.mu.Unlock()
	a.e.closed[a.id] = true
	return nil
}
