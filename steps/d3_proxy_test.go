package steps

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/features"
	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// capacitySubject is a subject that asks for a sandbox with curl, at most
// three times: on 429 KUBERNETES::POOL_CAPACITY_EXHAUSTED it waits the
// Retry-After ($2 = wait) or not at all ($2 = nowait), and in the end
// reports "capacity" and exits 1.
const capacitySubject = `#!/bin/sh
out="$1"; mode="$2"
tmp=$(mktemp -d) || exit 3
n=0; code=none
while [ $n -lt 3 ]; do
  n=$((n+1))
  code=$(curl -sS -o "$tmp/body" -D "$tmp/head" -w '%{http_code}' -X POST \
    -H "OPEN-SANDBOX-API-KEY: $OPEN_SANDBOX_API_KEY" -H 'Content-Type: application/json' \
    --data '{"image":{"uri":"python:3.12"},"entrypoint":["sleep","60"],"resourceLimits":{"cpu":"500m"},"timeout":60}' \
    "http://$OPEN_SANDBOX_DOMAIN/v1/sandboxes")
  [ "$code" = 429 ] && grep -q 'KUBERNETES::POOL_CAPACITY_EXHAUSTED' "$tmp/body" || break
  ra=$(tr -d '\r' < "$tmp/head" | awk -F': ' 'tolower($1)=="retry-after"{print $2}')
  if [ $n -lt 3 ] && [ "$mode" = wait ]; then sleep "${ra:-0}"; fi
done
rm -rf "$tmp"
printf '{"sandbox_id":null,"exit_code":1,"duration_ms":1,"stop_reason":"error","error":{"class":"capacity","message":"insufficient capacity after %d attempts (last %s)"},"metrics":{},"steps":[]}\n' "$n" "$code" > "$out/summary.json"
exit 1
`

// TestD3OnARealTargetIsInjectedByTheRecordingProxy runs D3's scenario (the
// feature file, through godog) on a real-kind target: a lifecycle server
// that would accept every create. The subject's recording proxy answers its
// creates itself with the 429 of a 1.1.1 Kubernetes pool at capacity, so
// the drill is measured there (it used to be "not measured"): none of the
// creates reaches the target, each is on the proxy's record as injected by
// the harness, the attempts and their spacing are judged from those
// records as on the bundled server (a subject that waits the Retry-After
// passes, one that does not fails), and each verdict says where its 429s
// came from.
func TestD3OnARealTargetIsInjectedByTheRecordingProxy(t *testing.T) {
	for _, tool := range []string{"curl", "awk", "mktemp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the test's subject cannot make its requests", tool)
		}
	}
	var mu sync.Mutex
	creates := 0
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost && strings.TrimSuffix(r.URL.Path, "/") == "/v1/sandboxes" {
			mu.Lock()
			creates++
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"id":"sb-1","status":{"state":"Running"}}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"SANDBOX::NOT_FOUND","message":"not found"}`))
	}))
	defer target.Close()

	grade := func(mode string) (rubric.Outcome, string) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "run.sh"), []byte(capacitySubject), 0o755))
		res := rubric.NewResults(rubric.Course)
		bundle := t.TempDir()
		e, err := NewEnv(core.SuiteInput{
			Results:        res,
			Submission:     &submission.Submission{Dir: dir, Source: submission.SourceManifest, Manifest: submission.Manifest{Run: "sh run.sh {out} " + mode}},
			BundleDir:      bundle,
			Target:         core.Target{Kind: rubric.TargetReal, Domain: strings.TrimPrefix(target.URL, "http://"), APIKey: "k-platform"},
			SubjectTimeout: time.Minute,
		})
		require.NoError(t, err)
		defer e.Close()
		status := godog.TestSuite{ScenarioInitializer: e.InitializeScenario, Options: &godog.Options{
			FS: features.FS, Paths: []string{"d3_capacity.feature"}, Tags: "@drill:D3",
			Format: "progress", Output: io.Discard, NoColors: true, Strict: true,
		}}.Run()
		require.NotEqual(t, 2, status, "godog could not run the feature")
		return outcomeOf(t, res, "D3"), bundle
	}

	o, bundle := grade("wait")
	assert.Equal(t, rubric.Passed, o.Verdict, o.Reason)
	assert.Contains(t, o.Reason, "3 create attempts")
	assert.Contains(t, o.Reason, "3 create(s) answered 429 with Retry-After 2s by the run's recording proxy, none forwarded to the target")
	assert.True(t, strings.HasSuffix(o.Reason, "; 429 injected by the harness's recording proxy (OpenSandbox's docker runtime has no pools)"), o.Reason)
	mu.Lock()
	assert.Zero(t, creates, "no create of the drill's run reached the target")
	mu.Unlock()

	// The evidence: the proxy's records say who answered each create.
	var rel string
	for _, ev := range o.Evidence {
		if strings.HasSuffix(ev, "proxy-lifecycle.json") {
			rel = ev
		}
	}
	require.NotEmpty(t, rel, "the proxy's records are evidence: %v", o.Evidence)
	b, err := os.ReadFile(filepath.Join(bundle, rel))
	require.NoError(t, err)
	var calls []command.Call
	require.NoError(t, json.Unmarshal(b, &calls))
	require.Len(t, calls, 3)
	for i, c := range calls {
		assert.Equal(t, http.StatusTooManyRequests, c.Status)
		assert.Equal(t, command.CapacityInjected, c.Injected)
		assert.Equal(t, "KUBERNETES::POOL_CAPACITY_EXHAUSTED", c.ErrorCode)
		if i > 0 {
			assert.GreaterOrEqual(t, c.Time.Sub(calls[i-1].Time), 1800*time.Millisecond, "the subject waited the Retry-After")
		}
	}
	b, err = os.ReadFile(filepath.Join(filepath.Dir(filepath.Join(bundle, rel)), "lifecycle-calls.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"detail": "429 injected by the harness's recording proxy (OpenSandbox's docker runtime has no pools)"`)

	// A subject that does not wait fails D3, judged from the same records.
	o, _ = grade("nowait")
	assert.Equal(t, rubric.Failed, o.Verdict, o.Reason)
	assert.Contains(t, o.Reason, "before its Retry-After of 2s")
	assert.Contains(t, o.Reason, "429 injected by the harness's recording proxy")
	mu.Lock()
	assert.Zero(t, creates)
	mu.Unlock()
}
