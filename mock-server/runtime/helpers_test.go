//go:build linux

package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// newRuntime returns an isolating runtime or skips with the reason.
func newRuntime(t testing.TB) *runtime.Linux {
	t.Helper()
	if testing.Short() {
		t.Skip("-short starts no sandbox (make test-short); make test runs the isolation tests")
	}
	if os.Geteuid() != 0 {
		t.Skipf("isolation tests need root (euid is %d)", os.Geteuid())
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap not installed: apt-get install -y bubblewrap")
	}
	rt, err := runtime.NewLinux(runtime.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Skipf("isolation unavailable: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

type specOpt func(*runtime.Spec)

func withLimits(l runtime.Limits) specOpt   { return func(s *runtime.Spec) { s.Limits = l } }
func withEntrypoint(e ...string) specOpt    { return func(s *runtime.Spec) { s.Entrypoint = e } }
func withEnv(env map[string]string) specOpt { return func(s *runtime.Spec) { s.Env = env } }

func newSandbox(t testing.TB, rt runtime.Runtime, opts ...specOpt) runtime.Sandbox {
	t.Helper()
	prof, err := runtime.ProfileFor("python:3.11")
	if err != nil {
		t.Fatal(err)
	}
	spec := runtime.Spec{ID: uuid.NewString(), Profile: prof, Entrypoint: []string{"tail", "-f", "/dev/null"}}
	for _, o := range opts {
		o(&spec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := rt.Create(ctx, spec)
	if err != nil {
		t.Fatalf("create sandbox: %v", err)
	}
	t.Cleanup(func() { _ = sb.Destroy() })
	return sb
}

func client(sb runtime.Sandbox) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return sb.DialExecd(ctx) },
	}}
}

type sseEvent struct {
	Type          string `json:"type"`
	Text          string `json:"text"`
	ExecutionTime *int64 `json:"execution_time"`
	Timestamp     *int64 `json:"timestamp"`
	Error         *struct {
		Ename     string   `json:"ename"`
		Evalue    string   `json:"evalue"`
		Traceback []string `json:"traceback"`
	} `json:"error"`
}

// runResult is one POST /command: the raw body and its parsed frames.
type runResult struct {
	Status int
	Header http.Header
	Raw    []byte
	Events []sseEvent
}

func (r runResult) stdout() []string {
	var out []string
	for _, e := range r.Events {
		if e.Type == "stdout" {
			out = append(out, e.Text)
		}
	}
	return out
}

func (r runResult) last() sseEvent {
	for i := len(r.Events) - 1; i >= 0; i-- {
		if r.Events[i].Type != "ping" {
			return r.Events[i]
		}
	}
	return sseEvent{}
}

func (r runResult) has(typ string) bool {
	for _, e := range r.Events {
		if e.Type == typ {
			return true
		}
	}
	return false
}

// ok reports exit 0.
func (r runResult) ok() bool { return r.last().Type == "execution_complete" }

func run(t testing.TB, sb runtime.Sandbox, body map[string]any) runResult {
	t.Helper()
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://execd/command", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client(sb).Do(req)
	if err != nil {
		t.Fatalf("POST /command: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read stream: %v", err)
	}
	res := runResult{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if resp.StatusCode != http.StatusOK {
		return res
	}
	for _, frame := range strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n") {
		if frame == "" {
			continue
		}
		var ev sseEvent
		if err := json.Unmarshal([]byte(frame), &ev); err != nil {
			t.Fatalf("frame %q is not a bare JSON object: %v (stream %q)", frame, err, raw)
		}
		res.Events = append(res.Events, ev)
	}
	return res
}

func sh(t testing.TB, sb runtime.Sandbox, cmd string) runResult {
	t.Helper()
	return run(t, sb, map[string]any{"command": cmd})
}

func get(t testing.TB, sb runtime.Sandbox, path string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	return do(t, sb, http.MethodGet, path, nil, hdr)
}

func do(t testing.TB, sb runtime.Sandbox, method, path string, body io.Reader, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://execd"+path, body)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client(sb).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// upload sends one metadata+file pair the way every SDK does.
func upload(t testing.TB, sb runtime.Sandbox, path string, content []byte, metaFilename bool) (*http.Response, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	if metaFilename {
		h.Set("Content-Disposition", `form-data; name="metadata"; filename="metadata"`)
	} else {
		h.Set("Content-Disposition", `form-data; name="metadata"`)
	}
	h.Set("Content-Type", "application/json")
	pw, _ := mw.CreatePart(h)
	meta, _ := json.Marshal(map[string]any{"path": path, "mode": 644})
	_, _ = pw.Write(meta)
	fw, _ := mw.CreateFormFile("file", "blob")
	_, _ = fw.Write(content)
	_ = mw.Close()
	return do(t, sb, http.MethodPost, "/files/upload", &buf, map[string]string{"Content-Type": mw.FormDataContentType()})
}

func errorCode(b []byte) string {
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b, &e)
	return e.Code
}

// eventually polls cond until it holds or timeout passes, and says whether it held. Tests wait with it for
// something a background command starts, instead of a fixed sleep that a loaded machine can outrun.
func eventually(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// fileSize is the size of p, 0 while it does not exist (a counter a
// background loop appends to).
func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// waitGrows fails t unless the counter p grows past size within 30 s: the
// loop appending to it runs (when says at which point of the test).
func waitGrows(t testing.TB, p string, size int64, when string) {
	t.Helper()
	if !eventually(30*time.Second, func() bool { return fileSize(p) > size }) {
		t.Fatalf("counter not growing %s (30s): %d → %d", when, size, fileSize(p))
	}
}

// stillWhilePaused fails t if the counter p grows over hold, measured from
// settle on (a write under way lands); it returns the size it held at.
func stillWhilePaused(t testing.TB, p string, settle, hold time.Duration) int64 {
	t.Helper()
	time.Sleep(settle)
	size := fileSize(p)
	time.Sleep(hold)
	if got := fileSize(p); got != size {
		t.Fatalf("the counter grew while paused: %d → %d", size, got)
	}
	return size
}
