package mockserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pySDKScript drives the server with the official Python SDK (opensandbox
// 1.1.1, sync API), which is strict: exact success codes, isoparse of
// expiresAt, required Sandbox fields, timestamped SSE events.
const pySDKScript = `
import json, os, sys
from datetime import timedelta
from opensandbox import SandboxSync, SandboxManagerSync
from opensandbox.config.connection_sync import ConnectionConfigSync
out = {}
try:
    cfg = ConnectionConfigSync(domain=os.environ["OPEN_SANDBOX_DOMAIN"], api_key=os.environ["OPEN_SANDBOX_API_KEY"],
                               use_server_proxy=os.environ.get("USE_SERVER_PROXY") == "1")
    sb = SandboxSync.create("python:3.11", connection_config=cfg, timeout=timedelta(minutes=10),
                            entrypoint=["tail", "-f", "/dev/null"], resource={"cpu": "1", "memory": "1Gi"},
                            env={"GREETING": "hi"})
    out["id"] = sb.id
    ok = sb.commands.run("echo $GREETING; python3 -c 'print(6*7)'")
    out["okStdout"] = [m.text for m in ok.logs.stdout]
    out["okExit"] = ok.exit_code
    bad = sb.commands.run("echo bad >&2; exit 3")
    out["badStderr"] = [m.text for m in bad.logs.stderr]
    out["badExit"] = bad.exit_code
    sb.files.write_file("/workspace/t.txt", "héllo\nworld\n")
    sb.files.write_file("/workspace/b.bin", bytes(range(256)))
    out["text"] = sb.files.read_file("/workspace/t.txt")
    out["binOK"] = sb.files.read_bytes("/workspace/b.bin") == bytes(range(256))
    r = sb.renew(timedelta(minutes=20))
    out["renewed"] = str(r.expires_at)
    info = sb.get_info()
    out["state"] = str(info.status.state)
    sb.pause()
    out["pausedState"] = str(sb.get_info().status.state)
    sb = SandboxSync.resume(out["id"], connection_config=cfg)
    out["afterResume"] = [m.text for m in sb.commands.run("echo back").logs.stdout]
    sb.kill()
    try:
        SandboxManagerSync.create(connection_config=cfg).get_sandbox_info(out["id"])
        out["afterKill"] = "found"
    except Exception as e:
        out["afterKill"] = "%s %r" % (getattr(e, "status_code", ""), e)
except Exception as e:
    import traceback
    out["error"] = traceback.format_exc()
print(json.dumps(out))
`

// TestOfficialPythonSDK needs a Python with opensandbox==1.1.1 installed, named
// by $OSB_PY_SDK_PYTHON; it runs against the real Linux runtime.
func TestOfficialPythonSDK(t *testing.T) {
	py := pythonWith(t, "opensandbox", "official Python SDK", "opensandbox==1.1.1")
	for _, proxy := range []string{"0", "1"} {
		t.Run("use_server_proxy="+proxy, func(t *testing.T) {
			srv, _ := realEnv(t)
			stdout, stderr := runPyScript(t, py, pySDKScript, srv, "USE_SERVER_PROXY="+proxy)
			var out struct {
				ID          string   `json:"id"`
				OkStdout    []string `json:"okStdout"`
				OkExit      *int     `json:"okExit"`
				BadStderr   []string `json:"badStderr"`
				BadExit     *int     `json:"badExit"`
				Text        string   `json:"text"`
				BinOK       bool     `json:"binOK"`
				Renewed     string   `json:"renewed"`
				State       string   `json:"state"`
				PausedState string   `json:"pausedState"`
				AfterResume []string `json:"afterResume"`
				AfterKill   string   `json:"afterKill"`
				Error       string   `json:"error"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "stdout: %s stderr: %s", stdout.String(), stderr.String())
			require.Empty(t, out.Error)
			assert.Regexp(t, uuid4Re, out.ID)
			assert.Equal(t, []string{"hi", "42"}, out.OkStdout)
			require.NotNil(t, out.OkExit)
			assert.Equal(t, 0, *out.OkExit)
			assert.Equal(t, []string{"bad"}, out.BadStderr)
			require.NotNil(t, out.BadExit)
			assert.Equal(t, 3, *out.BadExit)
			assert.Equal(t, "héllo\nworld\n", out.Text)
			assert.True(t, out.BinOK)
			assert.NotEmpty(t, out.Renewed)
			assert.Contains(t, out.State, "Running")
			assert.Contains(t, out.PausedState, "Paused")
			assert.Equal(t, []string{"back"}, out.AfterResume)
			assert.Contains(t, out.AfterKill, "not found")
		})
	}
}

// pythonWith is $OSB_PY_SDK_PYTHON when it can import module; otherwise the
// test is not measured (what names the SDK, pkg its pinned requirement).
func pythonWith(t *testing.T, module, what, pkg string) string {
	t.Helper()
	py := os.Getenv("OSB_PY_SDK_PYTHON")
	if py == "" {
		sdkUnavailable(t, fmt.Sprintf("%s not measured: set OSB_PY_SDK_PYTHON to a python with %s installed", what, pkg))
	}
	if err := exec.Command(py, "-c", "import "+module).Run(); err != nil {
		sdkUnavailable(t, fmt.Sprintf("%s not measured: %s cannot import %s: %v (make deps)", what, py, module, err))
	}
	return py
}

// runPyScript runs script with py against srv (its domain and the test key
// in the environment, plus env) and returns its stdout and stderr; it must
// exit 0 within two minutes.
func runPyScript(t *testing.T, py, script string, srv *Server, env ...string) (stdout, stderr bytes.Buffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sdk.py")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, path)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPEN_SANDBOX_DOMAIN=" + srv.Domain(),
		"OPEN_SANDBOX_API_KEY=" + testKey}, env...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	return stdout, stderr
}
