package mockserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/agent"
	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/egress"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

func TestMain(m *testing.M) {
	agent.MainIfAgent() // this test binary is also the in-sandbox agent
	if root := os.Getenv(bundledChildEnv); root != "" {
		os.Exit(bundledChild(root))
	}
	os.Exit(m.Run())
}

// realEnv starts the server on the real Linux runtime and egress hub.
func realEnv(t testing.TB, opts ...envOption) (*Server, runtime.Runtime) {
	t.Helper()
	if testing.Short() {
		t.Skip("real runtime: skipped in -short mode")
	}
	dir := t.TempDir()
	rt, err := runtime.NewLinux(runtime.Options{StateDir: dir, AllowInsecureNoIsolation: true})
	if err != nil {
		t.Skipf("real runtime not available here: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	enforced, reason := rt.Isolation()
	t.Logf("real runtime: isolation enforced=%v %s", enforced, reason)
	var srv *Server
	hub, err := egress.NewHub(egress.HubConfig{StateDir: dir, Audit: audit.RecorderFunc(func(ev wire.Event) {
		if srv != nil {
			srv.Recorder().Record(ev)
		}
	})})
	require.NoError(t, err)
	t.Cleanup(func() { _ = hub.Close() })
	cfg := Config{APIKey: testKey, AdminToken: testAdmin, StateDir: dir, Runtime: rt, Egress: EgressAdapter{Hub: hub}}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err = New(cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { _ = srv.Close() })
	return srv, rt
}

// createSandbox creates a sandbox from body on srv (it must be accepted) and
// returns its id and the base URL of its execd endpoint (port 44772).
func createSandbox(t testing.TB, srv *Server, body map[string]any) (id, base string) {
	t.Helper()
	status, m := apiDo(t, srv, "POST", "/v1/sandboxes", body)
	require.Equal(t, http.StatusAccepted, status, "%v", m)
	id = m["id"].(string)
	_, ep := apiDo(t, srv, "GET", "/v1/sandboxes/"+id+"/endpoints/44772", nil)
	return id, "http://" + ep["endpoint"].(string)
}

// realSandbox starts the server on the real runtime (realEnv) and creates one
// default sandbox on it: the server, the sandbox's id and its execd base URL.
func realSandbox(t testing.TB) (srv *Server, id, base string) {
	t.Helper()
	srv, _ = realEnv(t)
	id, base = createSandbox(t, srv, validCreate())
	return srv, id, base
}

func apiDo(t testing.TB, srv *Server, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rdr io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rdr = strings.NewReader(string(b))
	}
	req, _ := http.NewRequest(method, srv.URL()+path, rdr)
	req.Header.Set(headerAPIKey, testKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

// runCommand runs a command over the execd endpoint and returns stdout lines and the exit code.
func runCommand(t testing.TB, base, command string) ([]string, *int) {
	t.Helper()
	res := postJSON(t, base+"/command", map[string]any{"command": command}, nil)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var out []string
	var code *int
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "data:"))
		if line == "" {
			continue
		}
		var ev sseEvent
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		switch ev.Type {
		case "stdout":
			out = append(out, ev.Text)
		case "execution_complete":
			zero := 0
			code = &zero
		case "error":
			n, err := strconv.Atoi(ev.Error.Evalue)
			require.NoError(t, err, "evalue %q", ev.Error.Evalue)
			code = &n
		}
	}
	return out, code
}

func TestRealRuntimeEndToEnd(t *testing.T) {
	srv, id, base := realSandbox(t)

	res, err := http.Get(base + "/ping")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	out, code := runCommand(t, base, "echo hello; python3 -c 'print(6*7)'")
	assert.Equal(t, []string{"hello", "42"}, out)
	require.NotNil(t, code)
	assert.Equal(t, 0, *code)
	_, code = runCommand(t, base, "echo oops >&2; exit 3")
	require.NotNil(t, code)
	assert.Equal(t, 3, *code)

	cmds := srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCommand})
	require.Len(t, cmds, 2)
	assert.Equal(t, 0, *cmds[0].Command.ExitCode)
	assert.Equal(t, int64(len("hello")+len("42")), cmds[0].Command.StdoutBytes)
	assert.Equal(t, 3, *cmds[1].Command.ExitCode)
	assert.Equal(t, int64(len("oops")), cmds[1].Command.StderrBytes)

	// pause really stops progress; resume continues
	assert.Equal(t, http.StatusAccepted, func() int { s, _ := apiDo(t, srv, "POST", "/v1/sandboxes/"+id+"/pause", nil); return s }())
	_, g := apiDo(t, srv, "GET", "/v1/sandboxes/"+id, nil)
	assert.Equal(t, "Paused", g["status"].(map[string]any)["state"])
	assert.Equal(t, http.StatusAccepted, func() int { s, _ := apiDo(t, srv, "POST", "/v1/sandboxes/"+id+"/resume", nil); return s }())
	out, _ = runCommand(t, base, "echo back")
	assert.Equal(t, []string{"back"}, out)

	dir := srv.lookup(id).rt.Dir()
	assert.DirExists(t, dir)
	status, _ := apiDo(t, srv, "DELETE", "/v1/sandboxes/"+id, nil)
	assert.Equal(t, http.StatusNoContent, status)
	assert.NoDirExists(t, dir, "sandbox directory removed on delete")
	status, _ = apiDo(t, srv, "GET", "/v1/sandboxes/"+id, nil)
	assert.Equal(t, http.StatusNotFound, status)
}

func TestRealRuntimeEntrypointExit(t *testing.T) {
	srv, _ := realEnv(t)
	body := validCreate()
	body["entrypoint"] = []string{"sh", "-c", "exit 4"}
	status, m := apiDo(t, srv, "POST", "/v1/sandboxes", body)
	require.Equal(t, http.StatusAccepted, status, "%v", m)
	id := m["id"].(string)
	var state string
	for i := 0; i < 100; i++ {
		_, g := apiDo(t, srv, "GET", "/v1/sandboxes/"+id, nil)
		state = g["status"].(map[string]any)["state"].(string)
		if state != "Running" {
			assert.Equal(t, "CONTAINER_EXITED_ERROR", g["status"].(map[string]any)["reason"])
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, "Failed", state)
	evs := srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindState})
	assert.Equal(t, "entrypoint exited 4", evs[len(evs)-1].State.Reason)
}

func TestRealRuntimeEgressAPI(t *testing.T) {
	srv, _ := realEnv(t)
	body := validCreate()
	body["networkPolicy"] = map[string]any{"defaultAction": "deny", "egress": []any{map[string]string{"action": "allow", "target": "pypi.org"}}}
	id, _ := createSandbox(t, srv, body)
	_, ep := apiDo(t, srv, "GET", "/v1/sandboxes/"+id+"/endpoints/18080", nil)
	token := ep["headers"].(map[string]any)["OPENSANDBOX-EGRESS-AUTH"].(string)
	status, b := egressGet(t, "http://"+ep["endpoint"].(string)+"/policy", token)
	assert.Equal(t, http.StatusOK, status, "%s", b)
	assert.Contains(t, string(b), "pypi.org")
}

func TestRealRuntimeCloseLeavesNothing(t *testing.T) {
	srv, _ := realEnv(t)
	type left struct {
		dir  string
		pids []int
	}
	var sbs []left
	for i := 0; i < 2; i++ {
		status, m := apiDo(t, srv, "POST", "/v1/sandboxes", validCreate())
		require.Equal(t, http.StatusAccepted, status, "%v", m)
		sb := srv.lookup(m["id"].(string))
		require.NotNil(t, sb)
		pids := sb.rt.Pids()
		require.NotEmpty(t, pids)
		sbs = append(sbs, left{dir: sb.rt.Dir(), pids: pids})
	}
	require.NoError(t, srv.Close())
	for _, l := range sbs {
		assert.NoDirExists(t, l.dir)
		for _, pid := range l.pids {
			st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			alive := err == nil && !strings.Contains(string(st), ") Z ")
			assert.False(t, alive, "pid %d still alive after Close: %s", pid, st)
			// a zombie must be reaped soon (else the runtime leaks it)
			gone := false
			for i := 0; i < 60 && !gone; i++ {
				_, err := os.Stat("/proc/" + strconv.Itoa(pid))
				gone = os.IsNotExist(err)
				if !gone {
					time.Sleep(50 * time.Millisecond)
				}
			}
			assert.True(t, gone, "pid %d never reaped", pid)
		}
	}
}

// A background command's exit code reaches the audit when the sandbox is
// removed; one still running then is recorded as killed.
func TestRealRuntimeBackgroundOutcomeAudited(t *testing.T) {
	srv, id, base := realSandbox(t)

	for _, c := range []string{"exit 7", "sleep 60"} {
		body, _ := json.Marshal(map[string]any{"command": c, "background": true})
		res, err := http.Post(base+"/command", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	time.Sleep(500 * time.Millisecond) // let `exit 7` finish
	require.NoError(t, srv.ExpireNow(id))

	outcome := map[string]*int{}
	for _, ev := range srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCommand}) {
		if ev.Command.ExitCode != nil {
			outcome[ev.Command.Command] = ev.Command.ExitCode
		}
	}
	require.NotNil(t, outcome["exit 7"], "the finished background command's exit code is audited")
	assert.Equal(t, 7, *outcome["exit 7"])
	require.NotNil(t, outcome["sleep 60"], "the running one is audited as killed")
	assert.Equal(t, -1, *outcome["sleep 60"])
}
