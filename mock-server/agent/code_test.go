package agent

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// codeAgent serves an agent whose image is a code interpreter's (contexts
// on) or not.
func codeAgent(t *testing.T, contexts bool) *httptest.Server {
	srv, _ := codeAgentRoot(t, contexts)
	return srv
}

// codeAgentRoot is codeAgent and the agent's root directory.
func codeAgentRoot(t *testing.T, contexts bool) (*httptest.Server, string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("no python3 here: %v", err)
	}
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "workspace"), 0o755))
	cfg := agentCfg(root)
	cfg.CodeContexts = contexts
	a := New(cfg, nil)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() { srv.Close(); a.closeKernels() })
	return srv, root
}

// codeRun is a /code stream as a client reads it: its frames, and a trailing
// JSON error body if one followed them.
type codeRun struct {
	status int
	events []event
	body   string // a non-200 answer's body, or a raw {code,message} after the frames
}

func (r codeRun) types() []string {
	var ts []string
	for _, e := range r.events {
		if e.Type != "ping" {
			ts = append(ts, e.Type)
		}
	}
	return ts
}

func (r codeRun) text(kind string) string {
	var b strings.Builder
	for _, e := range r.events {
		if e.Type == kind {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func (r codeRun) of(kind string) *event {
	for i := range r.events {
		if r.events[i].Type == kind {
			return &r.events[i]
		}
	}
	return nil
}

func runCode(t *testing.T, base string, body map[string]any) codeRun {
	t.Helper()
	b, _ := json.Marshal(body)
	res, err := (&http.Client{Timeout: 60 * time.Second}).Post(base+"/code", "application/json", strings.NewReader(string(b)))
	require.NoError(t, err)
	defer res.Body.Close()
	out := codeRun{status: res.StatusCode}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev event
		if res.StatusCode != http.StatusOK || json.Unmarshal([]byte(line), &ev) != nil || ev.Type == "" {
			out.body += line
			continue
		}
		out.events = append(out.events, ev)
	}
	return out
}

func inContext(id, code string) map[string]any {
	return map[string]any{"context": map[string]any{"id": id, "language": "python"}, "code": code}
}

// TestCodeContextPython: in a code interpreter's image a Python context keeps
// its namespace between runs and streams as execd streams a Jupyter kernel:
// init with the context's id, what the cell prints, execution_count and a
// result keyed "text" for a last expression's value, status "error" and the
// exception for a failing cell, then execution_complete.
func TestCodeContextPython(t *testing.T) {
	srv := codeAgent(t, true)
	st, body := do(t, "POST", srv.URL+"/code/context", "application/json", `{"language":"python"}`)
	require.Equal(t, http.StatusOK, st, body)
	var ctx struct{ ID, Language string }
	require.NoError(t, json.Unmarshal([]byte(body), &ctx))
	assert.Regexp(t, `^[0-9a-f]{32}$`, ctx.ID)
	assert.Equal(t, "python", ctx.Language)

	r := runCode(t, srv.URL, inContext(ctx.ID, "x = 21\nprint('hello')\nimport sys; print('warned', file=sys.stderr)"))
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, []string{"init", "stdout", "stderr", "execution_complete"}, r.types())
	assert.Equal(t, ctx.ID, r.of("init").Text)
	assert.Equal(t, "hello\n", r.text("stdout"))
	assert.Equal(t, "warned\n", r.text("stderr"))
	assert.Positive(t, r.of("execution_complete").ExecutionTime)

	r = runCode(t, srv.URL, inContext(ctx.ID, "x * 2"))
	assert.Equal(t, []string{"init", "execution_count", "result", "execution_complete"}, r.types(), "the namespace is kept")
	assert.Equal(t, 2, r.of("execution_count").ExecutionCount)
	assert.Equal(t, map[string]any{"text": "42"}, r.of("result").Results)

	r = runCode(t, srv.URL, inContext(ctx.ID, "print('before')\n1/0"))
	assert.Equal(t, []string{"init", "stdout", "status", "error", "execution_complete"}, r.types())
	assert.Equal(t, "error", r.of("status").Text)
	e := r.of("error").Error
	require.NotNil(t, e)
	assert.Equal(t, "ZeroDivisionError", e.Ename)
	assert.Equal(t, "division by zero", e.Evalue)
	assert.Contains(t, strings.Join(e.Traceback, "\n"), "ZeroDivisionError: division by zero")
	assert.NotContains(t, strings.Join(e.Traceback, "\n"), "kernel", "the kernel's own frames are not the cell's")

	r = runCode(t, srv.URL, inContext(ctx.ID, "def f(:\n  pass"))
	require.NotNil(t, r.of("error"))
	assert.Equal(t, "SyntaxError", r.of("error").Error.Ename)
	r = runCode(t, srv.URL, inContext(ctx.ID, "x"))
	assert.Equal(t, map[string]any{"text": "21"}, r.of("result").Results, "a failed cell leaves the namespace as it was")
	assert.Equal(t, 5, r.of("execution_count").ExecutionCount, "every run counts, failed ones too")

	// Another context has a namespace of its own.
	_, body = do(t, "POST", srv.URL+"/code/context", "application/json", `{"language":"python","cwd":"/workspace/sub"}`)
	var other struct{ ID, Cwd string }
	require.NoError(t, json.Unmarshal([]byte(body), &other))
	assert.Equal(t, "/workspace/sub", other.Cwd)
	r = runCode(t, srv.URL, inContext(other.ID, "import os; print(os.getcwd().endswith('/workspace/sub')); x"))
	assert.Equal(t, "True\n", r.text("stdout"), "the context runs in its cwd")
	assert.Equal(t, "NameError", r.of("error").Error.Ename)

	// List, get, delete.
	st, body = do(t, "GET", srv.URL+"/code/contexts?language=python", "", "")
	assert.Equal(t, http.StatusOK, st)
	assert.Contains(t, body, ctx.ID)
	assert.Contains(t, body, other.ID)
	st, body = do(t, "GET", srv.URL+"/code/contexts/"+ctx.ID, "", "")
	assert.Equal(t, http.StatusOK, st)
	assert.JSONEq(t, `{"id":"`+ctx.ID+`","language":"python"}`, body)
	st, body = do(t, "DELETE", srv.URL+"/code/contexts/"+ctx.ID, "", "")
	assert.Equal(t, http.StatusOK, st, body)
	assert.Empty(t, body)
	st, body = do(t, "GET", srv.URL+"/code/contexts/"+ctx.ID, "", "")
	assert.Equal(t, http.StatusNotFound, st)
	assert.JSONEq(t, `{"code":"CONTEXT_NOT_FOUND","message":"context `+ctx.ID+` not found"}`, body)
	r = runCode(t, srv.URL, inContext(ctx.ID, "x"))
	assert.Equal(t, http.StatusInternalServerError, r.status)
	assert.JSONEq(t, `{"code":"RUNTIME_ERROR","message":"error running codes context not found"}`, r.body)
	st, _ = do(t, "DELETE", srv.URL+"/code/contexts?language=python", "", "")
	assert.Equal(t, http.StatusOK, st)
	_, body = do(t, "GET", srv.URL+"/code/contexts", "", "")
	assert.Equal(t, "[]", body)
}

// A run with a language and no id uses that language's default context,
// created on first use and kept; a cell can be interrupted through DELETE
// /code?id=<context>; a second run while one is going answers "session is
// busy" after its init, as execd does.
func TestCodeDefaultContextInterruptAndBusy(t *testing.T) {
	srv, root := codeAgentRoot(t, true)
	lang := map[string]any{"language": "python"}
	r := runCode(t, srv.URL, map[string]any{"context": lang, "code": "y = 5"})
	require.Equal(t, http.StatusOK, r.status, r.body)
	id := r.of("init").Text
	r = runCode(t, srv.URL, map[string]any{"context": lang, "code": "y + 1"})
	assert.Equal(t, id, r.of("init").Text, "the same default context")
	assert.Equal(t, map[string]any{"text": "6"}, r.of("result").Results)
	_, body := do(t, "GET", srv.URL+"/code/contexts", "", "")
	assert.Contains(t, body, id)

	done := make(chan codeRun, 1)
	go func() {
		done <- runCode(t, srv.URL, inContext(id, "import time\nprint('sleeping')\nopen('started', 'w').close()\ntime.sleep(30)"))
	}()
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(root, "workspace", "started"))
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the cell started")
	busy := runCode(t, srv.URL, inContext(id, "1"))
	assert.Equal(t, http.StatusOK, busy.status, "init went out before the kernel was found busy")
	assert.Equal(t, []string{"init"}, busy.types())
	assert.JSONEq(t, `{"code":"RUNTIME_ERROR","message":"error running codes session is busy"}`, busy.body)
	st, _ := do(t, "DELETE", srv.URL+"/code?id="+id, "", "")
	assert.Equal(t, http.StatusOK, st)
	select {
	case r = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the interrupt did not end the cell")
	}
	assert.Equal(t, "sleeping\n", r.text("stdout"))
	require.NotNil(t, r.of("error"))
	assert.Equal(t, "KeyboardInterrupt", r.of("error").Error.Ename)
	r = runCode(t, srv.URL, inContext(id, "y"))
	assert.Equal(t, map[string]any{"text": "5"}, r.of("result").Results, "the context survives the interrupt")
}

// Without a language a run is a plain command, in any image; contexts need
// a code interpreter's image, and Python is the only kernel here; the rest
// answers execd's errors.
func TestCodeRoutesErrors(t *testing.T) {
	for _, contexts := range []bool{false, true} {
		srv := codeAgent(t, contexts)
		r := runCode(t, srv.URL, map[string]any{"code": "echo hi; echo there"})
		assert.Equal(t, []string{"init", "stdout", "stdout", "execution_complete"}, r.types(), "a plain command, line by line")
		assert.Equal(t, "hithere", r.text("stdout"))
		r = runCode(t, srv.URL, map[string]any{"context": map[string]any{"language": "command"}, "code": "exit 3"})
		require.NotNil(t, r.of("error"))
		assert.Equal(t, "3", r.of("error").Error.Evalue)

		want := "language runtime server not configured, please check your image runtime"
		if contexts {
			want = "no kernel specs found"
		}
		st, body := do(t, "POST", srv.URL+"/code/context", "application/json", `{"language":"java"}`)
		assert.Equal(t, http.StatusInternalServerError, st)
		assert.JSONEq(t, `{"code":"RUNTIME_ERROR","message":"error creating code context. `+want+`"}`, body)
		r = runCode(t, srv.URL, map[string]any{"context": map[string]any{"language": "bash"}, "code": "echo hi"})
		assert.Equal(t, http.StatusInternalServerError, r.status)
		assert.JSONEq(t, `{"code":"RUNTIME_ERROR","message":"error running codes `+want+`"}`, r.body)
		if !contexts {
			st, body = do(t, "POST", srv.URL+"/code/context", "application/json", `{"language":"python"}`)
			assert.Equal(t, http.StatusInternalServerError, st)
			assert.Contains(t, body, "language runtime server not configured")
		}

		r = runCode(t, srv.URL, map[string]any{"context": map[string]any{"language": "cobol"}, "code": "x"})
		assert.JSONEq(t, `{"code":"RUNTIME_ERROR","message":"error running codes unknown language: cobol"}`, r.body)
		st, body = do(t, "POST", srv.URL+"/code", "application/json", `{"context":{"language":"python"}}`)
		assert.Equal(t, http.StatusBadRequest, st)
		assert.Contains(t, body, `"INVALID_REQUEST_BODY"`)
		st, _ = do(t, "POST", srv.URL+"/code", "application/json", `{not json`)
		assert.Equal(t, http.StatusBadRequest, st)
		st, body = do(t, "DELETE", srv.URL+"/code/contexts", "", "")
		assert.Equal(t, http.StatusBadRequest, st)
		assert.JSONEq(t, `{"code":"MISSING_QUERY","message":"missing query parameter 'language'"}`, body)
		st, body = do(t, "GET", srv.URL+"/code/contexts?language=command", "", "")
		assert.Equal(t, http.StatusInternalServerError, st)
		assert.Contains(t, body, "unsupported language context operation: command")
		st, _ = do(t, "DELETE", srv.URL+"/code", "", "")
		assert.Equal(t, http.StatusBadRequest, st, "an interrupt names what it interrupts")
		st, _ = do(t, "GET", srv.URL+"/code", "", "")
		assert.Equal(t, http.StatusNotFound, st, "gin's 404 for a method the route does not take")
	}
}

// A cell that prints a flood, or a result too large for one event, never
// blows up the agent: output streams in chunks, and the agent stays up.
func TestCodeFloodIsBounded(t *testing.T) {
	srv := codeAgent(t, true)
	r := runCode(t, srv.URL, map[string]any{"context": map[string]any{"language": "python"},
		"code": "import sys\nfor i in range(20000): sys.stdout.write('x' * 100)\nprint()\nlen('y' * 10)"})
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Len(t, r.text("stdout"), 20000*100+1)
	assert.Equal(t, map[string]any{"text": "10"}, r.of("result").Results)
	assert.Regexp(t, regexp.MustCompile(`execution_complete$`), strings.Join(r.types(), " "))
}
