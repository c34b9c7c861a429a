package steps

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// modelTestCommand prints the model variables it got and, when it has an
// endpoint, makes one chat request to it with curl (on loopback only).
const modelTestScript = `#!/bin/sh
echo "base=${OPENAI_BASE_URL:-none}"
echo "key=${OPENAI_API_KEY:+set}"
[ -n "$OPENAI_BASE_URL" ] || exit 0
curl -sS --max-time 20 -H "Authorization: Bearer $OPENAI_API_KEY" -H 'Content-Type: application/json' \
  -d '{"model":"capstone-scripted","messages":[{"role":"user","content":"are you there?"}]}' \
  "$OPENAI_BASE_URL/chat/completions"
`

func invokeEnv(t *testing.T, withModel bool) *Env {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "test.sh"), []byte(modelTestScript), 0o755))
	sub := &submission.Submission{Dir: dir, Source: submission.SourceManifest, Manifest: submission.Manifest{
		Run: "sh run.sh", Test: submission.Tests{Unit: "sh test.sh", Integration: "sh test.sh"}, Model: withModel}}
	e, err := NewEnv(core.SuiteInput{
		Results:    rubric.NewResults(rubric.Course),
		Submission: sub,
		BundleDir:  t.TempDir(),
		// A real-kind target that is never dialled: the command only talks
		// to the model; the recording proxy only listens.
		Target:         core.Target{Kind: rubric.TargetReal, Domain: "127.0.0.1:9", APIKey: "k-test"},
		SubjectTimeout: time.Minute,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// A submission with model: true gets a model endpoint in its test commands:
// OPENAI_BASE_URL on loopback, a chat request answered by the plain script,
// and the request recorded in the invocation's evidence.
func TestInvokeModelEndpoint(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the test command cannot make its request")
	}
	e := invokeEnv(t, true)
	inv := e.invoke(context.Background(), "test.unit", "sh test.sh", "subject-test.unit", "run-x", time.Minute)
	require.True(t, inv.Ran())
	assert.Equal(t, 0, inv.Res.ExitCode)
	out := readAll(inv.Res.StdoutPath)
	line := strings.SplitN(strings.TrimPrefix(out, "base="), "\n", 2)[0]
	u, err := url.Parse(line)
	require.NoError(t, err, out)
	assert.Equal(t, "127.0.0.1", u.Hostname(), out)
	assert.Contains(t, out, "key=set")
	assert.Contains(t, out, `"chat.completion"`, "the model answered the request")
	assert.Contains(t, out, "OK.")

	require.NotNil(t, inv.model)
	require.Len(t, inv.model.completions(), 1)
	tr, err := os.ReadFile(filepath.Join(inv.Dir, "model-transcript.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(tr), "are you there?")
	assert.NotContains(t, string(tr), inv.model.apiKey, "the model key is redacted in the transcript")
	ev := inv.evidence()
	assert.Contains(t, ev, filepath.Join(inv.RelDir, "model-transcript.jsonl"))
	assert.Contains(t, ev, filepath.Join(inv.RelDir, "model-dialogue.md"))
	assert.Contains(t, readAll(filepath.Join(inv.Dir, "invocation.json")), `"model_script": "neutral"`)
}

// Without model: true a command gets no model variables and no model.
func TestInvokeNoModelWithoutManifest(t *testing.T) {
	e := invokeEnv(t, false)
	inv := e.invoke(context.Background(), "test.unit", "sh test.sh", "subject-test.unit", "run-x", time.Minute)
	require.True(t, inv.Ran())
	out := readAll(inv.Res.StdoutPath)
	assert.Contains(t, out, "base=none")
	assert.NotContains(t, out, "key=set")
	assert.Nil(t, inv.model)
	_, err := os.Stat(filepath.Join(inv.Dir, "model-transcript.jsonl"))
	assert.True(t, os.IsNotExist(err))
}
