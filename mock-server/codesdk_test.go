package mockserver

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// codeSDKScript drives code contexts with the official code interpreter SDK
// (opensandbox-code-interpreter 1.1.1, sync API) in a code interpreter's
// image: a context keeps its state between runs, a failing cell reports its
// exception, contexts are listed and deleted; in a plain python image the
// SDK meets execd's "language runtime server not configured".
const codeSDKScript = `
import json, os
from datetime import timedelta
from opensandbox import SandboxSync
from opensandbox.config.connection_sync import ConnectionConfigSync
from code_interpreter import CodeInterpreterSync
out = {}
try:
    cfg = ConnectionConfigSync(domain=os.environ["OPEN_SANDBOX_DOMAIN"], api_key=os.environ["OPEN_SANDBOX_API_KEY"])
    sb = SandboxSync.create("opensandbox/code-interpreter:v1.1.0", connection_config=cfg, timeout=timedelta(minutes=10),
                            entrypoint=["tail", "-f", "/dev/null"])
    ci = CodeInterpreterSync.create(sb)
    ctx = ci.codes.create_context("python")
    out["contextLanguage"] = ctx.language
    ci.codes.run("import statistics\nxs = [3, 1, 4, 1, 5]\nprint('n =', len(xs))", context=ctx)
    ex = ci.codes.run("statistics.mean(xs)", context=ctx)
    out["mean"] = [r.text for r in ex.result]
    out["count"] = ex.execution_count
    bad = ci.codes.run("xs[10]", context=ctx)
    out["errorName"] = bad.error.name if bad.error else None
    printed = ci.codes.run("print('hello from the context')", context=ctx)
    out["stdout"] = [m.text for m in printed.logs.stdout]
    out["listed"] = [c.id for c in ci.codes.list_contexts("python")] == [ctx.id]
    ci.codes.delete_context(ctx.id)
    out["afterDelete"] = [c.id for c in ci.codes.list_contexts("python")]
    sb.kill()
    plain = SandboxSync.create("python:3.11", connection_config=cfg, timeout=timedelta(minutes=10),
                               entrypoint=["tail", "-f", "/dev/null"])
    try:
        CodeInterpreterSync.create(plain, skip_health_check=True).codes.create_context("python")
        out["plain"] = "created"
    except Exception as e:
        out["plain"] = str(e)
    plain.kill()
except Exception as e:
    import traceback
    out["error"] = traceback.format_exc()
print(json.dumps(out))
`

// TestOfficialCodeInterpreterSDK needs $OSB_PY_SDK_PYTHON with
// opensandbox-code-interpreter==1.1.1 installed (make deps); it runs on the
// real Linux runtime. The cells run are in the audit as commands.
func TestOfficialCodeInterpreterSDK(t *testing.T) {
	py := pythonWith(t, "code_interpreter", "code interpreter SDK", "opensandbox-code-interpreter==1.1.1")
	t.Run("no execd token", func(t *testing.T) { runCodeSDK(t, py) })
	// With execd access tokens (the grader below level full): its calls
	// carry its endpoints' headers too.
	t.Run("execd token", func(t *testing.T) { runCodeSDK(t, py, withExecdToken) })
}

func runCodeSDK(t *testing.T, py string, opts ...envOption) {
	srv, _ := realEnv(t, opts...)
	if len(opts) > 0 {
		require.True(t, srv.Info().ExecdAccessToken, "the execds have tokens")
	}
	stdout, stderr := runPyScript(t, py, codeSDKScript, srv)
	var out struct {
		ContextLanguage string   `json:"contextLanguage"`
		Mean            []string `json:"mean"`
		Count           *int     `json:"count"`
		ErrorName       string   `json:"errorName"`
		Stdout          []string `json:"stdout"`
		Listed          bool     `json:"listed"`
		AfterDelete     []string `json:"afterDelete"`
		Plain           string   `json:"plain"`
		Error           string   `json:"error"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "stdout: %s stderr: %s", stdout.String(), stderr.String())
	require.Empty(t, out.Error)
	assert.Equal(t, "python", out.ContextLanguage)
	assert.Equal(t, []string{"2.8"}, out.Mean, "state kept between runs")
	require.NotNil(t, out.Count)
	assert.Equal(t, 2, *out.Count)
	assert.Equal(t, "IndexError", out.ErrorName)
	assert.Equal(t, []string{"hello from the context\n"}, out.Stdout)
	assert.True(t, out.Listed)
	assert.Empty(t, out.AfterDelete)
	assert.Contains(t, out.Plain, "language runtime server not configured")

	var cells []string
	for _, ev := range srv.AuditQuery(audit.Query{Kind: wire.KindCommand}) {
		cells = append(cells, ev.Command.Command)
	}
	assert.Contains(t, cells, "statistics.mean(xs)", "a cell is audited as the command it is")
}
