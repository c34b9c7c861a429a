//go:build linux

package mockserver

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/internal/uidtest"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// startInsecureBundled is the bundled server as the grader starts it where
// namespaces are not allowed (--insecure-no-isolation, the runtime in
// insecure mode as root: each sandbox a uid of its own, execd on the
// host's loopback), with the default ExecdAccessToken (auto), on a state
// directory other uids can traverse.
func startInsecureBundled(t *testing.T) (*Bundled, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short starts no sandbox")
	}
	if os.Geteuid() != 0 {
		t.Skipf("uid sandboxes need root (euid is %d)", os.Geteuid())
	}
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		require.NoError(t, os.Chmod(d, 0o711))
	}
	dir := filepath.Join(base, "state")
	b, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, AdminToken: testAdmin, StateDir: dir,
		InsecureNoIsolation: true, Wiring: Wiring{NewRuntime: func(o RuntimeOptions) (runtime.Runtime, error) {
			return runtime.NewLinux(uidtest.Options(o.StateDir))
		}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.True(t, b.Runtime.Enforced()["own_uid"], "insecure mode as root runs each sandbox as a uid of its own")
	return b, dir
}

// execdRun posts a command to an execd base URL with the headers given and
// returns its status, stdout lines and exit code (nil when the stream gave
// none, or on a non-200 answer, whose body is the one line returned).
func execdRun(t *testing.T, base string, hdr map[string]string, command string, envs map[string]string) (int, []string, *int) {
	t.Helper()
	res := postJSON(t, base+"/command", map[string]any{"command": command, "envs": envs}, hdr)
	defer res.Body.Close()
	var out []string
	var code *int
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "data:"))
		if line == "" {
			continue
		}
		if res.StatusCode != http.StatusOK {
			out = append(out, line)
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
			require.NoError(t, err)
			code = &n
		}
	}
	return res.StatusCode, out, code
}

// tokenScan is a Python program that looks for the token (given reversed in
// $R, so that neither its command line nor its own environment holds it)
// in every /proc/*/cmdline and /proc/*/environ its uid can read and in every
// file it can read under $D, and prints what it could read and where the
// token was.
const tokenScan = `
import json, os
t = os.environ["R"][::-1].encode()
read, hits = 0, []
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    for f in ("cmdline", "environ"):
        try:
            with open("/proc/%s/%s" % (pid, f), "rb") as fh:
                b = fh.read()
        except OSError:
            continue
        read += 1
        if t in b:
            hits.append("/proc/%s/%s" % (pid, f))
for root, dirs, files in os.walk(os.environ["D"]):
    for n in files:
        p = os.path.join(root, n)
        try:
            with open(p, "rb") as fh:
                b = fh.read(64 << 20)
        except OSError:
            continue
        read += 1
        if t in b:
            hits.append(p)
print(json.dumps({"read": read, "hits": hits, "env": any(t in v.encode() for k, v in os.environ.items() if k != "R")}))
`

// execdProbe is a Python program that calls, with no token, the execd of
// another sandbox ($A: its host:port) directly and through the server's
// keyless proxy route ($S: the lifecycle host:port, $I: the sandbox's id),
// as hostile-saboteur does: `kill -9 -1`. It prints each status and body.
const execdProbe = `
import json, os, urllib.error, urllib.request
def call(method, url, body=None):
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return [r.status, r.read(512).decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.read(512).decode()]
    except OSError as e:
        return [0, str(e)]
kill = json.dumps({"command": "kill -9 -1"}).encode()
a, s, i = os.environ["A"], os.environ["S"], os.environ["I"]
print(json.dumps({
    "ping": call("GET", "http://%s/ping" % a),
    "command": call("POST", "http://%s/command" % a, kill),
    "proxied": call("POST", "http://%s/proxy/44772/command" % a, kill),
    "server_proxy": call("POST", "http://%s/sandboxes/%s/proxy/44772/command" % (s, i), kill),
}))
`

// TestInsecureExecdTokenStopsOtherUIDs: where the bundled server's
// sandboxes have no network namespace (insecure mode as root, the grader's
// level uid), each sandbox's execd listens on the host's loopback, where
// every process of the machine reaches it. With its access token (on by
// default there) a process of another uid that finds the port (here a
// command of another sandbox: its own uid) gets execd's 401 on /ping, on
// /command and through /proxy/44772, and its `kill -9 -1` runs nowhere; the
// keyless server proxy route gives it the same 401. The sandbox's owner,
// with the token from its endpoint response, runs commands as before, and
// the sandbox outlived the attack. The token is in no environment, command
// line or file that the attacker's uid, or the sandbox's own uid, can read.
// Then the official Python SDK (sync and async API, direct and through the
// server proxy) creates, pings, runs commands and moves files on that
// server unchanged: it sends the endpoint's headers on every execd call.
func TestInsecureExecdTokenStopsOtherUIDs(t *testing.T) {
	b, dir := startInsecureBundled(t)
	srv := b.Server
	require.True(t, srv.Info().ExecdAccessToken, "insecure mode: each execd has a token by default")
	victim, victimBase := createSandbox(t, srv, validCreate())
	token := sandboxToken(t, srv, victim)
	owner := map[string]string{headerExecdToken: token}
	st, out, code := execdRun(t, victimBase, owner, "id -u; echo up", nil)
	require.Equal(t, http.StatusOK, st, "%q", out)
	require.NotNil(t, code)
	require.Len(t, out, 2, "%q", out)
	victimUID := out[0]

	attackerID, attackerBase := createSandbox(t, srv, validCreate())
	attacker := map[string]string{headerExecdToken: sandboxToken(t, srv, attackerID)}
	addr := strings.TrimSuffix(strings.TrimPrefix(victimBase, "http://"), "/proxy/44772")
	st, out, _ = execdRun(t, attackerBase, attacker, "id -u; python3 -c \"$PROBE\"",
		map[string]string{"PROBE": execdProbe, "A": addr, "S": srv.Domain(), "I": victim})
	require.Equal(t, http.StatusOK, st, "%q", out)
	require.Len(t, out, 2, "%q", out)
	require.NotEqual(t, victimUID, out[0], "the attacker is another uid")
	var probe map[string][2]any
	require.NoError(t, json.Unmarshal([]byte(out[1]), &probe), out[1])
	t.Logf("another uid, without the token: %v", probe)
	for _, k := range []string{"ping", "command", "proxied", "server_proxy"} {
		assert.EqualValues(t, http.StatusUnauthorized, probe[k][0], "%s: %v", k, probe[k])
		assert.Equal(t, execd401, probe[k][1], k)
	}

	// The victim lived through it: its processes, and its owner's calls.
	st, out, code = execdRun(t, victimBase, owner, "echo still up", nil)
	require.Equal(t, http.StatusOK, st)
	assert.Equal(t, []string{"still up"}, out)
	require.NotNil(t, code)
	assert.Equal(t, 0, *code)
	st, _, _ = rawExecd(t, "GET", victimBase+"/ping", "", owner)
	assert.Equal(t, http.StatusOK, st)

	// Where the token is not: anything the attacker's uid or the
	// sandbox's own uid can read (processes' command lines and
	// environments, files under the server's state directory), and the
	// sandbox's commands' environment.
	rev := reverse(token)
	for _, c := range []struct {
		who  string
		base string
		hdr  map[string]string
	}{{"another uid", attackerBase, attacker}, {"the sandbox's own uid", victimBase, owner}} {
		st, out, _ = execdRun(t, c.base, c.hdr, "python3 -c \"$SCAN\"", map[string]string{"SCAN": tokenScan, "R": rev, "D": filepath.Dir(dir)})
		require.Equal(t, http.StatusOK, st, "%q", out)
		require.Len(t, out, 1, "%q", out)
		var scan struct {
			Read int      `json:"read"`
			Hits []string `json:"hits"`
			Env  bool     `json:"env"`
		}
		require.NoError(t, json.Unmarshal([]byte(out[0]), &scan), out[0])
		t.Logf("%s: read %d command lines, environments and files; the token in none", c.who, scan.Read)
		assert.Positive(t, scan.Read, "%s read nothing at all: the scan proves nothing", c.who)
		assert.Empty(t, scan.Hits, "%s can read the token", c.who)
		assert.False(t, scan.Env, "the token is in a command's environment (%s)", c.who)
	}

	// The official Python SDK, unchanged, on this server.
	py := pythonWith(t, "opensandbox", "official Python SDK", "opensandbox==1.1.1")
	for _, proxy := range []string{"0", "1"} {
		t.Run("sync use_server_proxy="+proxy, func(t *testing.T) {
			stdout, stderr := runPyScript(t, py, pySDKScript, srv, "USE_SERVER_PROXY="+proxy)
			var res struct {
				OkStdout    []string `json:"okStdout"`
				Text        string   `json:"text"`
				BinOK       bool     `json:"binOK"`
				AfterResume []string `json:"afterResume"`
				Error       string   `json:"error"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "stdout: %s stderr: %s", stdout.String(), stderr.String())
			require.Empty(t, res.Error)
			assert.Equal(t, []string{"hi", "42"}, res.OkStdout)
			assert.Equal(t, "héllo\nworld\n", res.Text)
			assert.True(t, res.BinOK)
			assert.Equal(t, []string{"back"}, res.AfterResume, "resume pings and runs again")
		})
		t.Run("async use_server_proxy="+proxy, func(t *testing.T) {
			stdout, stderr := runPyScript(t, py, pyAsyncTokenScript, srv, "USE_SERVER_PROXY="+proxy)
			var res struct {
				Stdout  []string `json:"stdout"`
				Text    string   `json:"text"`
				Headers []string `json:"headers"`
				Error   string   `json:"error"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "stdout: %s stderr: %s", stdout.String(), stderr.String())
			require.Empty(t, res.Error)
			assert.Contains(t, res.Headers, headerExecdToken, "the SDK got the token in the endpoint's headers")
			assert.Equal(t, []string{"7"}, res.Stdout)
			assert.Equal(t, "async\n", res.Text)
		})
	}
}

// pyAsyncTokenScript: the async API (the student fixture's), through create
// (its /ping readiness loop), a command, a file written and read back, and
// kill; it prints the endpoint header names the SDK was given.
const pyAsyncTokenScript = `
import asyncio, json, os, traceback
from datetime import timedelta
from opensandbox import Sandbox
from opensandbox.config import ConnectionConfig
async def main():
    out = {}
    try:
        cfg = ConnectionConfig(domain=os.environ["OPEN_SANDBOX_DOMAIN"], api_key=os.environ["OPEN_SANDBOX_API_KEY"],
                               use_server_proxy=os.environ.get("USE_SERVER_PROXY") == "1")
        sb = await Sandbox.create("python:3.11", connection_config=cfg, timeout=timedelta(minutes=5))
        ep = await sb.get_endpoint(44772)
        out["headers"] = sorted((ep.headers or {}).keys())
        ex = await sb.commands.run("python3 -c 'print(3+4)'")
        out["stdout"] = [m.text for m in ex.logs.stdout]
        await sb.files.write_file("/workspace/a.txt", "async\n")
        out["text"] = await sb.files.read_file("/workspace/a.txt")
        await sb.kill()
    except Exception:
        out["error"] = traceback.format_exc()
    print(json.dumps(out))
asyncio.run(main())
`

// sandboxToken is sandbox id's execd token, from its endpoint response.
func sandboxToken(t *testing.T, srv *Server, id string) string {
	t.Helper()
	_, ep := apiDo(t, srv, "GET", "/v1/sandboxes/"+id+"/endpoints/44772", nil)
	h, _ := ep["headers"].(map[string]any)
	tok, _ := h[headerExecdToken].(string)
	require.NotEmpty(t, tok, "no execd token in %v", ep)
	return tok
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}
