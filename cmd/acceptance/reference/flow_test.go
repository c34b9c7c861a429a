package reference

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/summary"
)

// fakeOSB is a lifecycle server + execd in one httptest server. It records
// every call in order. Commands are answered by behaviour functions; the
// "real" analysis mode runs the embedded script with the host's python3.
type fakeOSB struct {
	t       *testing.T
	mu      sync.Mutex
	calls   []string
	created map[string]any // last create body
	live    bool
	deleted bool
	dir     string // the sandbox's /workspace
	apiKey  string

	install func(w *sse, attempt int)
	analyze func(f *fakeOSB, w *sse, r *http.Request)
	// hang makes commands block until the client goes away.
	installAttempts int
	vaultBody       map[string]any
	analyzeEnv      map[string]string
	pingStatus      int                      // 0 = 200
	other           func(s *sse, cmd string) // any other command; nil = exit 127
	srv             *httptest.Server
}

const fakeID = "6c1e2a4d-7f0b-4d7e-9a61-3b5f2c8e9d10"

func newFake(t *testing.T) *fakeOSB {
	f := &fakeOSB{t: t, dir: t.TempDir(), apiKey: "test-key-123456"}
	f.install = func(w *sse, _ int) { w.complete() }
	f.analyze = cannedAnalysis
	f.srv = httptest.NewServer(f.routes())
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOSB) log(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakeOSB) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeOSB) domain() string { return strings.TrimPrefix(f.srv.URL, "http://") }

type sse struct {
	w  http.ResponseWriter
	fl http.Flusher
}

func (s *sse) ev(m map[string]any) {
	m["timestamp"] = time.Now().UnixMilli()
	b, _ := json.Marshal(m)
	fmt.Fprintf(s.w, "%s\n\n", b)
	s.fl.Flush()
}
func (s *sse) out(typ, text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if l == "" {
			l = "\n"
		}
		s.ev(map[string]any{"type": typ, "text": l})
	}
}
func (s *sse) complete() { s.ev(map[string]any{"type": "execution_complete", "execution_time": 5}) }
func (s *sse) exit(code int) {
	s.ev(map[string]any{"type": "error", "error": map[string]any{"ename": "CommandExecError", "evalue": fmt.Sprint(code), "traceback": []string{fmt.Sprintf("exit status %d", code)}}})
}

func writeJSONResp(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeOSB) routes() http.Handler {
	mux := http.NewServeMux()
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("OPEN-SANDBOX-API-KEY") != f.apiKey {
				writeJSONResp(w, 401, map[string]string{"code": "INVALID_API_KEY", "message": "bad key"})
				return
			}
			h(w, r)
		}
	}
	notFound := func(w http.ResponseWriter) {
		writeJSONResp(w, 404, map[string]string{"code": "DOCKER::SANDBOX_NOT_FOUND", "message": "not found"})
	}
	mux.HandleFunc("POST /v1/sandboxes", auth(func(w http.ResponseWriter, r *http.Request) {
		f.log("create")
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.created, f.live = body, true
		f.mu.Unlock()
		writeJSONResp(w, 202, map[string]any{"id": fakeID, "status": map[string]string{"state": "Running"},
			"createdAt": "2026-11-29T07:00:00Z", "entrypoint": body["entrypoint"]})
	}))
	mux.HandleFunc("GET /v1/sandboxes/{id}", auth(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		live := f.live && r.PathValue("id") == fakeID
		f.mu.Unlock()
		if !live {
			f.log("get:404")
			notFound(w)
			return
		}
		f.log("get:200")
		writeJSONResp(w, 200, map[string]any{"id": fakeID, "status": map[string]string{"state": "Running"}, "createdAt": "x", "entrypoint": []string{"tail"}})
	}))
	mux.HandleFunc("DELETE /v1/sandboxes/{id}", auth(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		live := f.live
		f.live, f.deleted = false, true
		f.mu.Unlock()
		if !live {
			f.log("delete:404")
			notFound(w)
			return
		}
		f.log("delete")
		w.WriteHeader(204)
	}))
	mux.HandleFunc("GET /v1/sandboxes/{id}/endpoints/{port}", auth(func(w http.ResponseWriter, r *http.Request) {
		f.log("endpoint:" + r.PathValue("port"))
		if r.PathValue("port") == "18080" {
			writeJSONResp(w, 200, map[string]any{"endpoint": f.domain() + "/egress", "headers": map[string]string{"OPENSANDBOX-EGRESS-AUTH": "egress-tok-abc"}})
			return
		}
		writeJSONResp(w, 200, map[string]any{"endpoint": f.domain() + "/execd"})
	}))
	mux.HandleFunc("POST /egress/credential-vault", func(w http.ResponseWriter, r *http.Request) {
		f.log("vault")
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.vaultBody = body
		f.mu.Unlock()
		writeJSONResp(w, 201, map[string]any{"revision": 1, "credentials": []any{}, "bindings": []any{}})
	})
	execd := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			f.mu.Lock()
			live := f.live
			f.mu.Unlock()
			if !live {
				writeJSONResp(w, 502, map[string]string{"code": "GENERAL::UNKNOWN_ERROR", "message": "Could not connect to the backend sandbox"})
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /execd/ping", execd(func(w http.ResponseWriter, r *http.Request) {
		f.log("ping")
		if f.pingStatus != 0 {
			w.WriteHeader(f.pingStatus)
			return
		}
		w.WriteHeader(200)
	}))
	mux.HandleFunc("POST /execd/files/upload", execd(func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		require.NoError(f.t, err)
		var names []string
		var path string
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			require.NoError(f.t, err)
			if p.FormName() == "metadata" {
				assert.Equal(f.t, "metadata", p.FileName())
				var m struct{ Path string }
				_ = json.NewDecoder(p).Decode(&m)
				path = m.Path
				continue
			}
			dst, err := os.Create(filepath.Join(f.dir, filepath.Base(path)))
			require.NoError(f.t, err)
			_, _ = io.Copy(dst, p)
			dst.Close()
			names = append(names, path)
		}
		f.log("upload:" + strings.Join(names, ","))
		w.WriteHeader(200)
	}))
	mux.HandleFunc("POST /execd/command", execd(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Command string            `json:"command"`
			Timeout int64             `json:"timeout"`
			Envs    map[string]string `json:"envs"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		s := &sse{w: w, fl: w.(http.Flusher)}
		s.ev(map[string]any{"type": "init", "text": "cmd-" + fmt.Sprint(len(f.callLog()))})
		switch {
		case strings.Contains(req.Command, "pip install"):
			f.mu.Lock()
			f.installAttempts++
			n := f.installAttempts
			f.mu.Unlock()
			f.log("install")
			assert.Equal(f.t, "1", req.Envs["PIP_BREAK_SYSTEM_PACKAGES"])
			f.install(s, n)
		case req.Command == AnalyzeCommand:
			f.log("analyze")
			f.mu.Lock()
			f.analyzeEnv = req.Envs
			f.mu.Unlock()
			f.analyze(f, s, r)
		default:
			f.log("command:" + req.Command)
			if f.other != nil {
				f.other(s, req.Command)
				return
			}
			s.exit(127)
		}
	}))
	mux.HandleFunc("GET /execd/files/download", execd(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Query().Get("path")
		f.log("download:" + filepath.Base(p))
		b, err := os.ReadFile(filepath.Join(f.dir, filepath.Base(p)))
		if err != nil {
			writeJSONResp(w, 404, map[string]string{"code": "FILE_NOT_FOUND", "message": "file not found"})
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b)
	}))
	return mux
}

// cannedAnalysis writes artefacts with the right numbers for the test CSV
// (computed here from the known input, not by the code under test).
func cannedAnalysis(f *fakeOSB, s *sse, _ *http.Request) {
	metrics := map[string]any{"rows": 4, "columns": 3, "missing_total": 1, "mean_price": 2.5, "sum_price": 10.0}
	b, _ := json.Marshal(map[string]any{"metrics": metrics, "input_sha256": sha256File(f.t, filepath.Join(f.dir, "input.csv"))})
	require.NoError(f.t, os.WriteFile(filepath.Join(f.dir, "metrics.json"), b, 0o644))
	require.NoError(f.t, os.WriteFile(filepath.Join(f.dir, "report.md"), []byte("# Report\n\n| rows | 4 |\n| mean_price | 2.5 |\n"), 0o644))
	require.NoError(f.t, os.WriteFile(filepath.Join(f.dir, "chart.png"), append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 100)...), 0o644))
	s.out("stdout", `{"rows": 4}`)
	s.complete()
}

func sha256File(t *testing.T, p string) string {
	in, err := ReadHostInput(p)
	require.NoError(t, err)
	return in.SHA256
}

const testCSV = "price,category,note\n1,a,x\n2,b,\n3,a,y\n4,b,z\n"

func runFlow(t *testing.T, f *fakeOSB, mutate func(*Config)) (*Result, string) {
	t.Helper()
	dir := t.TempDir()
	csv := filepath.Join(dir, "in.csv")
	require.NoError(t, os.WriteFile(csv, []byte(testCSV), 0o644))
	cfg := DefaultConfig()
	cfg.CSV, cfg.Question, cfg.Out = csv, "What is the total price by category?", filepath.Join(dir, "out")
	cfg.Domain, cfg.APIKey = f.domain(), f.apiKey
	cfg.ReadyTimeout = 2 * time.Second
	if mutate != nil {
		mutate(&cfg)
	}
	res := Run(context.Background(), cfg)
	return res, cfg.Out
}

func loadSummary(t *testing.T, out string) *summary.Summary {
	t.Helper()
	s, verrs, err := summary.Load(filepath.Join(out, "summary.json"))
	require.NoError(t, err)
	require.Empty(t, verrs, "summary.json must validate against the schema")
	return s
}

// indexOf returns the position of the first call with the prefix, or -1.
func indexOf(calls []string, prefix string) int {
	for i, c := range calls {
		if strings.HasPrefix(c, prefix) {
			return i
		}
	}
	return -1
}

func assertOrder(t *testing.T, calls []string, order ...string) {
	t.Helper()
	last := -1
	for _, o := range order {
		i := indexOf(calls[last+1:], o)
		require.GreaterOrEqual(t, i, 0, "%q not found after position %d in %v", o, last, calls)
		last += 1 + i
	}
}

func TestFlowHappyPath(t *testing.T) {
	f := newFake(t)
	res, out := runFlow(t, f, nil)
	require.Equal(t, 0, res.ExitCode, "%+v", res.Summary.Error)
	calls := f.callLog()
	assertOrder(t, calls, "create", "endpoint:44772", "ping", "upload:/workspace/input.csv,/workspace/analyze.py,/workspace/question.txt",
		"install", "analyze", "download:report.md", "download:chart.png", "download:metrics.json", "delete", "get:404")

	s := loadSummary(t, out)
	assert.Equal(t, fakeID, s.SandboxID)
	assert.Equal(t, 0, s.ExitCode)
	assert.Equal(t, StopCompleted, s.StopReason)
	assert.Nil(t, s.Error)
	assert.Equal(t, 4.0, s.Metrics["rows"])
	require.Len(t, s.Steps, 2)
	assert.Equal(t, "install", s.Steps[0].Name)
	assert.Equal(t, InstallCommand, s.Steps[0].Command)
	assert.Equal(t, "analyze", s.Steps[1].Name)
	assert.Equal(t, 0, *s.Steps[1].ExitCode)

	// the create request follows the course
	f.mu.Lock()
	body := f.created
	f.mu.Unlock()
	assert.Equal(t, map[string]any{"uri": "python:3.12"}, body["image"])
	assert.Equal(t, []any{"tail", "-f", "/dev/null"}, body["entrypoint"])
	assert.Equal(t, 1200.0, body["timeout"])
	assert.Equal(t, map[string]any{"cpu": "1", "memory": "2Gi"}, body["resourceLimits"])
	assert.Equal(t, map[string]any{"defaultAction": "deny", "egress": []any{
		map[string]any{"action": "allow", "target": "pypi.org"},
		map[string]any{"action": "allow", "target": "files.pythonhosted.org"}}}, body["networkPolicy"])
	assert.Nil(t, body["credentialProxy"])

	// artefacts and evidence
	rep, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(rep), "mean_price")
	assert.True(t, isPNG(filepath.Join(out, "chart.png")))
	var ev Evidence
	b, err := os.ReadFile(filepath.Join(out, "evidence.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &ev))
	assert.True(t, ev.Cleanup.Confirmed)
	assert.Equal(t, 204, ev.Cleanup.DeleteStatus)
	assert.Equal(t, 404, ev.Cleanup.GetStatus)
	require.Len(t, ev.Verification, 4)
	for _, c := range ev.Verification {
		assert.True(t, c.Match, c.Name)
	}
	assert.Len(t, ev.Artifacts, 3)
	tr, err := os.ReadFile(filepath.Join(out, "evidence", "transcript.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(tr), `"request_line":"POST /v1/sandboxes HTTP/1.1"`)
	assert.NotContains(t, string(tr), f.apiKey, "the API key never reaches the evidence")
}

func TestFlowAnalysisFailureIsVisible(t *testing.T) {
	f := newFake(t)
	f.analyze = func(_ *fakeOSB, s *sse, _ *http.Request) {
		s.out("stderr", "Traceback (most recent call last):\n  File \"/workspace/analyze.py\", line 9, in <module>\nKeyError: 'price'")
		s.exit(1)
	}
	res, out := runFlow(t, f, nil)
	assert.Equal(t, 1, res.ExitCode)
	s := loadSummary(t, out)
	assert.Equal(t, 1, s.ExitCode)
	assert.Equal(t, StopAnalysisFailed, s.StopReason)
	require.NotNil(t, s.Error)
	assert.Equal(t, summary.ClassScriptError, s.Error.Class)
	require.Len(t, s.Steps, 2)
	assert.Equal(t, 1, *s.Steps[1].ExitCode)
	assert.Contains(t, s.Steps[1].Stderr, "KeyError: 'price'")
	assert.Contains(t, s.Steps[1].Stderr, "Traceback")
	assertOrder(t, f.callLog(), "create", "install", "analyze", "delete", "get:404")
	assert.Equal(t, -1, indexOf(f.callLog(), "download:"), "nothing is downloaded after a failed analysis")
}

func TestFlowInstallDeniedIsNotRetried(t *testing.T) {
	f := newFake(t)
	f.install = func(s *sse, _ int) {
		s.out("stderr", "WARNING: Retrying (Retry(total=0)) after connection broken by 'NewConnectionError('<HTTPSConnection>: Failed to establish a new connection: [Errno -2] Name or service not known')': /simple/tabulate/\nERROR: No matching distribution found for tabulate")
		s.exit(1)
	}
	res, out := runFlow(t, f, nil)
	assert.Equal(t, 1, res.ExitCode)
	s := loadSummary(t, out)
	assert.Equal(t, StopInstallFailed, s.StopReason)
	assert.Equal(t, summary.ClassNetworkPolicy, s.Error.Class)
	assert.Contains(t, s.Error.Message, "Name or service not known")
	require.Len(t, s.Steps, 1, "a policy denial is deterministic: one attempt, no analysis")
	assert.Equal(t, 1, f.installAttempts)
	assert.Equal(t, -1, indexOf(f.callLog(), "analyze"))
	assertOrder(t, f.callLog(), "install", "delete", "get:404")
	assert.Contains(t, res.Evidence.Install[0].Decision, "not retryable")
}

// TestFlowInstallUnreachableDegrades: an index the sandbox cannot reach at
// all (the target has no upstream: SERVFAIL, connection refused) is not
// fatal: one attempt, recorded as skipped with the reason in summary.json's
// degraded list, its step kept with the real exit code and stderr, and the
// analysis still runs (without tabulate).
func TestFlowInstallUnreachableDegrades(t *testing.T) {
	for name, cause := range map[string]string{
		"SERVFAIL":           "[Errno -3] Temporary failure in name resolution",
		"connection refused": "[Errno 111] Connection refused",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t)
			f.install = func(s *sse, _ int) {
				s.out("stderr", "WARNING: Retrying (Retry(total=0)) after connection broken by 'NewConnectionError('<HTTPSConnection>: Failed to establish a new connection: "+cause+"')': /simple/tabulate/\nERROR: No matching distribution found for tabulate")
				s.exit(1)
			}
			res, out := runFlow(t, f, nil)
			s := loadSummary(t, out)
			assert.Equal(t, 0, res.ExitCode, "%+v", s.Error)
			assert.Equal(t, StopCompleted, s.StopReason)
			assert.Nil(t, s.Error)
			assert.Equal(t, 1, f.installAttempts, "no retry: a missing upstream does not come back")
			require.Len(t, s.Degraded, 1)
			assert.Equal(t, "install", s.Degraded[0].Step)
			assert.Contains(t, s.Degraded[0].Reason, "install skipped (exit 1)")
			assert.Contains(t, s.Degraded[0].Reason, "no upstream")
			assert.Contains(t, s.Degraded[0].Reason, "without tabulate")
			assert.Equal(t, "install", s.Steps[0].Name)
			assert.Equal(t, 1, *s.Steps[0].ExitCode, "the step keeps its real exit code")
			assert.Contains(t, s.Steps[0].Stderr, cause)
			assert.Contains(t, res.Evidence.Install[0].Decision, "skipped: package index unreachable")
			assertOrder(t, f.callLog(), "install", "analyze", "download:report.md", "delete", "get:404")
			b, err := os.ReadFile(filepath.Join(out, "summary.json"))
			require.NoError(t, err)
			problems, err := summary.Validate(b)
			require.NoError(t, err)
			assert.Empty(t, problems, "summary.json with degraded still matches the schema")
		})
	}
}

func TestFlowTransientInstallRetriedOnce(t *testing.T) {
	f := newFake(t)
	f.install = func(s *sse, _ int) {
		s.out("stderr", "pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='pypi.org', port=443): Read timed out.")
		s.exit(2)
	}
	res, out := runFlow(t, f, nil)
	assert.Equal(t, 1, res.ExitCode)
	s := loadSummary(t, out)
	assert.Equal(t, StopInstallFailed, s.StopReason)
	require.Len(t, s.Steps, 2)
	assert.Equal(t, "install (attempt 2)", s.Steps[1].Name)
	assert.Equal(t, 2, f.installAttempts, "at most two attempts")
	require.Len(t, res.Evidence.Install, 2)
	assert.Contains(t, res.Evidence.Install[0].Decision, "retry")
	assert.Contains(t, res.Evidence.Install[1].Decision, "still failing after 2 attempts")

	// …and a transient failure that clears on the retry lets the run finish
	f2 := newFake(t)
	f2.install = func(s *sse, n int) {
		if n == 1 {
			s.out("stderr", "ReadTimeoutError: Read timed out.")
			s.exit(2)
			return
		}
		s.complete()
	}
	res, _ = runFlow(t, f2, nil)
	assert.Equal(t, 0, res.ExitCode, "%+v", res.Summary.Error)
	assert.Len(t, res.Summary.Steps, 3)
}

func TestFlowSandboxGoneMidRun(t *testing.T) {
	f := newFake(t)
	f.analyze = func(f *fakeOSB, s *sse, _ *http.Request) {
		f.mu.Lock()
		f.live = false // expired / deleted behind our back
		f.mu.Unlock()
		s.ev(map[string]any{"type": "error", "error": map[string]any{"ename": "CommandExecError", "evalue": "-1", "traceback": []string{"signal: killed"}}})
	}
	res, out := runFlow(t, f, nil)
	assert.Equal(t, 1, res.ExitCode)
	s := loadSummary(t, out)
	assert.Equal(t, StopSandboxGone, s.StopReason)
	assert.Equal(t, summary.ClassSandboxGone, s.Error.Class)
	assert.Equal(t, -1, *s.Steps[1].ExitCode)
	// cleanup still runs: DELETE (404, already gone) and GET 404 confirm it
	assertOrder(t, f.callLog(), "analyze", "get:404", "delete:404", "get:404")
	assert.True(t, res.Evidence.Cleanup.Confirmed)
}

// TestFlowSandboxGoneAfterStreamBreaks: a real server kills the container
// (the stream breaks) about a second before its delete completes and GET
// answers 404; the run must still see sandbox_gone, not a platform error.
func TestFlowSandboxGoneAfterStreamBreaks(t *testing.T) {
	f := newFake(t)
	f.analyze = func(f *fakeOSB, s *sse, _ *http.Request) {
		time.AfterFunc(time.Second, func() {
			f.mu.Lock()
			f.live = false // the delete completes a second later
			f.mu.Unlock()
		})
		s.ev(map[string]any{"type": "error", "error": map[string]any{"ename": "CommandExecError", "evalue": "-1", "traceback": []string{"signal: killed"}}})
	}
	res, out := runFlow(t, f, nil)
	s := loadSummary(t, out)
	assert.Equal(t, 1, res.ExitCode)
	assert.Equal(t, StopSandboxGone, s.StopReason)
	assert.Equal(t, summary.ClassSandboxGone, s.Error.Class)
	assert.True(t, res.Evidence.GoneObserved)
}

func TestFlowWallClockAndSignal(t *testing.T) {
	hang := func(f *fakeOSB, s *sse, r *http.Request) {
		s.out("stdout", "working…")
		<-r.Context().Done()
	}
	f := newFake(t)
	f.analyze = hang
	start := time.Now()
	res, out := runFlow(t, f, func(c *Config) { c.WallClock = 4 * time.Second })
	assert.Less(t, time.Since(start), 60*time.Second)
	s := loadSummary(t, out)
	assert.Equal(t, 1, res.ExitCode)
	assert.Equal(t, StopWallClock, s.StopReason)
	assert.Equal(t, summary.ClassBudget, s.Error.Class)
	assert.Nil(t, s.Steps[1].ExitCode, "the analysis never finished")
	assertOrder(t, f.callLog(), "analyze", "delete", "get:404")

	// SIGINT/SIGTERM arrive as a cancelled context: destroy, then stop.
	f2 := newFake(t)
	f2.analyze = hang
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	csv := filepath.Join(dir, "in.csv")
	require.NoError(t, os.WriteFile(csv, []byte(testCSV), 0o644))
	cfg := DefaultConfig()
	cfg.CSV, cfg.Question, cfg.Out, cfg.Domain, cfg.APIKey = csv, "q", filepath.Join(dir, "out"), f2.domain(), f2.apiKey
	go func() {
		for indexOf(f2.callLog(), "analyze") < 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	res = Run(ctx, cfg)
	assert.Equal(t, 1, res.ExitCode)
	assert.Equal(t, StopInterrupted, res.Summary.StopReason)
	assertOrder(t, f2.callLog(), "analyze", "delete", "get:404")
	loadSummary(t, cfg.Out)
}

func TestFlowMaxSteps(t *testing.T) {
	f := newFake(t)
	f.install = func(s *sse, _ int) { s.out("stderr", "Read timed out."); s.exit(2) }
	res, out := runFlow(t, f, func(c *Config) { c.MaxSteps = 1 })
	s := loadSummary(t, out)
	assert.Equal(t, 1, res.ExitCode)
	assert.Equal(t, StopMaxSteps, s.StopReason)
	assert.Equal(t, summary.ClassBudget, s.Error.Class)
	assert.Equal(t, 1, f.installAttempts)
}

func TestFlowVerificationMismatchFails(t *testing.T) {
	f := newFake(t)
	f.analyze = func(f *fakeOSB, s *sse, r *http.Request) {
		cannedAnalysis(f, s, r)
		b, _ := json.Marshal(map[string]any{"metrics": map[string]any{"rows": 5, "columns": 3, "mean_price": 2.5, "sum_price": 10}})
		require.NoError(f.t, os.WriteFile(filepath.Join(f.dir, "metrics.json"), b, 0o644))
	}
	res, out := runFlow(t, f, nil)
	s := loadSummary(t, out)
	assert.Equal(t, 1, res.ExitCode)
	assert.Equal(t, StopVerifyFailed, s.StopReason)
	assert.Contains(t, s.Error.Message, "rows: sandbox 5, host 4")
	assert.Contains(t, s.Error.Message, "suspect the reading first")
	assertOrder(t, f.callLog(), "download:metrics.json", "delete", "get:404")
}

func TestFlowCreateRejectedAndBadKey(t *testing.T) {
	f := newFake(t)
	res, out := runFlow(t, f, func(c *Config) { c.APIKey = "wrong-key-999" })
	s := loadSummary(t, out)
	assert.Equal(t, 1, res.ExitCode)
	assert.Equal(t, StopCreateFailed, s.StopReason)
	assert.Equal(t, summary.ClassPlatformError, s.Error.Class)
	assert.Contains(t, s.Error.Message, "401")
	assert.Empty(t, s.SandboxID)
	assert.Equal(t, []string{}, nonNil(f.callLog()), "rejected at auth: nothing recorded, nothing to clean")

	// a missing CSV never creates a sandbox
	f2 := newFake(t)
	res, _ = runFlow(t, f2, func(c *Config) { c.CSV = filepath.Join(t.TempDir(), "nope.csv") })
	assert.Equal(t, summary.ClassInputError, res.Summary.Error.Class)
	assert.Empty(t, f2.callLog())
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestFlowDataAPIUsesVaultNotSandbox(t *testing.T) {
	f := newFake(t)
	res, out := runFlow(t, f, func(c *Config) {
		c.DataAPIURL = "https://data.capstone.test/v1/rates"
		c.DataAPIToken = "real-secret-token-XYZ"
	})
	require.Equal(t, 0, res.ExitCode, "%+v", res.Summary.Error)
	f.mu.Lock()
	body, vault := f.created, f.vaultBody
	f.mu.Unlock()
	assert.Equal(t, map[string]any{"enabled": true}, body["credentialProxy"])
	rules := body["networkPolicy"].(map[string]any)["egress"].([]any)
	assert.Contains(t, rules, map[string]any{"action": "allow", "target": "data.capstone.test"})
	cb, _ := json.Marshal(body)
	assert.NotContains(t, string(cb), "real-secret-token-XYZ", "the token is never in the create request")
	vb, _ := json.Marshal(vault)
	assert.Contains(t, string(vb), "real-secret-token-XYZ", "the token goes to the vault")
	assert.Contains(t, string(vb), `"hosts":["data.capstone.test"]`)
	assertOrder(t, f.callLog(), "create", "endpoint:44772", "ping", "endpoint:18080", "vault", "upload", "install", "analyze")
	f.mu.Lock()
	env := f.analyzeEnv
	f.mu.Unlock()
	assert.Equal(t, "https://data.capstone.test/v1/rates", env["DATA_API_URL"])
	assert.NotEmpty(t, env["DATA_API_TOKEN"])
	assert.NotEqual(t, "real-secret-token-XYZ", env["DATA_API_TOKEN"], "the sandbox only gets a placeholder")
	for _, name := range []string{"summary.json", "evidence.json", filepath.Join("evidence", "transcript.jsonl"), filepath.Join("evidence", "run.log")} {
		b, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		assert.NotContains(t, string(b), "real-secret-token-XYZ", name)
		assert.NotContains(t, string(b), "egress-tok-abc", name)
	}
}

// TestFlowRealScript runs the embedded analyze.py with the host's python3
// (pandas + matplotlib from Debian, as inside the bundled server's sandboxes)
// behind the fake execd, so the host recomputation is checked against what
// pandas really computes.
func TestFlowRealScript(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs analyze.py with pandas and matplotlib (about 45 s); make test runs it")
	}
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import pandas, matplotlib").Run(); err != nil {
		t.Skipf("not measured: %s cannot import pandas and matplotlib (%v); `make deps` installs python3-pandas python3-matplotlib", py, err)
	}
	f := newFake(t)
	f.analyze = func(f *fakeOSB, s *sse, r *http.Request) {
		cmd := exec.CommandContext(r.Context(), py, filepath.Join(f.dir, "analyze.py"), f.dir)
		cmd.Env = append(os.Environ(), "MPLCONFIGDIR="+t.TempDir())
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		if so.Len() > 0 {
			s.out("stdout", so.String())
		}
		if se.Len() > 0 {
			s.out("stderr", se.String())
		}
		if err != nil {
			code := 1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			s.exit(code)
			return
		}
		s.complete()
	}
	for _, fx := range []string{"sales.csv", "semicolon.csv", "latin1.csv", "bom_utf8.csv", "quoted_fields.csv", "missing_values.csv", "header_only.csv", "empty.csv", "malformed.csv"} {
		t.Run(fx, func(t *testing.T) {
			src := filepath.Join("..", "..", "..", "fixtures", fx)
			if _, err := os.Stat(src); err != nil {
				t.Skipf("not measured: fixture %s not present", fx)
			}
			f.mu.Lock()
			f.calls, f.live, f.installAttempts = nil, false, 0
			f.mu.Unlock()
			res, out := runFlow(t, f, func(c *Config) { c.CSV, c.Question = src, question(t, fx) })
			s := loadSummary(t, out)
			switch fx {
			case "empty.csv":
				assert.Equal(t, 1, res.ExitCode)
				assert.Equal(t, summary.ClassInputError, s.Error.Class)
				assert.Contains(t, s.Steps[1].Stderr, "INPUT_ERROR")
			case "malformed.csv":
				assert.Equal(t, 1, res.ExitCode)
				assert.Equal(t, summary.ClassInputError, s.Error.Class)
				assert.Contains(t, s.Steps[1].Stderr, "Expected 8 fields")
			default:
				require.Equal(t, 0, res.ExitCode, "%+v\n%s", s.Error, s.Steps[len(s.Steps)-1].Stderr)
				rep, err := os.ReadFile(filepath.Join(out, "report.md"))
				require.NoError(t, err)
				// every claimed metric is in the report's key-number table, with
				// the same value
				table := map[string]string{}
				for _, line := range strings.Split(string(rep), "\n") {
					if cells := strings.Split(line, " | "); len(cells) == 2 && strings.HasPrefix(line, "| ") {
						table[strings.TrimPrefix(cells[0], "| ")] = strings.TrimSuffix(cells[1], " |")
					}
				}
				for name, v := range s.Metrics {
					got, err := strconv.ParseFloat(table[name], 64)
					require.NoError(t, err, "metric %s in report.md", name)
					assert.Equal(t, v, got, name)
				}
				assert.True(t, isPNG(filepath.Join(out, "chart.png")))
			}
			assertOrder(t, f.callLog(), "create", "upload", "install", "analyze", "delete", "get:404")
		})
	}
	// Inputs an outside probe sends: each ends in input_error (the script and
	// the host agree it is not a table), or, for one very long cell, in a
	// normal analysis well within the command's limit: dateutil once spent
	// minutes on a long cell (a 20 MB field ran into the 5-minute limit).
	dir := t.TempDir()
	for _, c := range []struct {
		name, body, stderr string
	}{
		{"ragged.csv", "a,b\n1,2,3\n4\n5,6\n", "line 2 has 3 fields, the header has 2"},
		{"nul.csv", "a\x00b,c\n1,2\n", "contains NUL bytes"},
		{"garbage.csv", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00", "contains NUL bytes"},
		{"long_cell.csv", "a,b\n1," + strings.Repeat("x", 2<<20) + "\n2,y\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(dir, c.name)
			require.NoError(t, os.WriteFile(src, []byte(c.body), 0o644))
			f.mu.Lock()
			f.calls, f.live, f.installAttempts = nil, false, 0
			f.mu.Unlock()
			res, out := runFlow(t, f, func(c *Config) {
				c.CSV, c.Question = src, "What is the total of a?"
				c.CommandTimeout = time.Minute
			})
			s := loadSummary(t, out)
			if c.stderr == "" {
				require.Equal(t, 0, res.ExitCode, "%+v", s.Error)
				assert.Equal(t, 2.0, s.Metrics["rows"])
				return
			}
			assert.Equal(t, 1, res.ExitCode)
			require.NotNil(t, s.Error)
			assert.Equal(t, summary.ClassInputError, s.Error.Class, s.Error.Message)
			assert.Contains(t, s.Steps[1].Stderr, c.stderr)
			assertOrder(t, f.callLog(), "create", "upload", "install", "analyze", "delete", "get:404")
		})
	}
}

// question is the fixture's own question from fixtures/manifest.json.
func question(t *testing.T, file string) string {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "fixtures", "manifest.json"))
	if err != nil {
		return "What is the total revenue by category?"
	}
	var m struct {
		Fixtures []struct{ File, Question string }
	}
	require.NoError(t, json.Unmarshal(b, &m))
	for _, f := range m.Fixtures {
		if f.File == file {
			return f.Question
		}
	}
	return "What is the total revenue by category?"
}

// panicOnce panics the first time a request matches, like a bug deep in a
// call; Run must still destroy the sandbox and write summary.json.
type panicOnce struct {
	match string
	done  bool
	mu    sync.Mutex
}

func (p *panicOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	hit := !p.done && strings.Contains(r.URL.RawQuery, p.match)
	if hit {
		p.done = true
	}
	p.mu.Unlock()
	if hit {
		panic("simulated bug while downloading")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestFlowPanicStillCleansUp(t *testing.T) {
	f := newFake(t)
	res, out := runFlow(t, f, func(c *Config) {
		c.HTTPClient = &http.Client{Transport: &panicOnce{match: "chart.png"}}
	})
	s := loadSummary(t, out)
	assert.Equal(t, 1, res.ExitCode)
	assert.Equal(t, StopInternalError, s.StopReason)
	assert.Equal(t, summary.ClassPlatformError, s.Error.Class)
	assert.Contains(t, s.Error.Message, "simulated bug")
	assertOrder(t, f.callLog(), "download:report.md", "delete", "get:404")
}

func TestFlowPerCommandTimeout(t *testing.T) {
	f := newFake(t)
	// execd enforces the command timeout itself: it kills the process group
	// and reports evalue -1 (CONTRACT §2.3).
	f.analyze = func(f *fakeOSB, s *sse, r *http.Request) {
		time.Sleep(1500 * time.Millisecond)
		s.out("stderr", "")
		s.ev(map[string]any{"type": "error", "error": map[string]any{"ename": "CommandExecError", "evalue": "-1", "traceback": []string{"signal: killed"}}})
	}
	res, out := runFlow(t, f, func(c *Config) { c.CommandTimeout = 1500 * time.Millisecond })
	s := loadSummary(t, out)
	assert.Equal(t, 1, res.ExitCode)
	assert.Equal(t, StopAnalysisFailed, s.StopReason)
	assert.Equal(t, summary.ClassTimeout, s.Error.Class)
	assert.Equal(t, -1, *s.Steps[1].ExitCode)
	assertOrder(t, f.callLog(), "analyze", "get:200", "delete", "get:404")
}

func TestMainUsage(t *testing.T) {
	var out, errb strings.Builder
	assert.Equal(t, 2, Main([]string{"--csv", "x.csv"}, &out, &errb))
	assert.Contains(t, errb.String(), "missing [--question --out]")
	errb.Reset()
	assert.Equal(t, 2, Main([]string{"--csv", "x", "--question", "q", "--out", t.TempDir(), "--ttl", "10s"}, &out, &errb))
	assert.Contains(t, errb.String(), "--ttl must be")
	assert.Equal(t, 2, Main([]string{"--bogus"}, &out, &errb))

	// a full run through Main: exit 1 and summary.json when the CSV is missing
	dir := t.TempDir()
	code := Main([]string{"--csv", filepath.Join(dir, "none.csv"), "--question", "q", "--out", dir, "--domain", "127.0.0.1:1"}, &out, &errb)
	assert.Equal(t, 1, code)
	s := loadSummary(t, dir)
	assert.Equal(t, summary.ClassInputError, s.Error.Class)
	assert.Contains(t, out.String(), "error [input_error]")
}

func TestFlowSandboxNeverReady(t *testing.T) {
	f := newFake(t)
	f.pingStatus = 502
	res, out := runFlow(t, f, func(c *Config) { c.ReadyTimeout = 600 * time.Millisecond })
	s := loadSummary(t, out)
	assert.Equal(t, 1, res.ExitCode)
	assert.Equal(t, StopSandboxNotReady, s.StopReason)
	assert.Equal(t, summary.ClassPlatformError, s.Error.Class)
	assert.Contains(t, s.Error.Message, "502")
	assert.Empty(t, s.Steps)
	assertOrder(t, f.callLog(), "create", "ping", "ping", "get:200", "delete", "get:404")
}
