package steps

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// TestIntegrationTestMustTouchASandbox: test.integration passes only when
// the server saw the command's own key create a sandbox, run a command in it
// and delete it. A command that only writes a passing JUnit XML fails with
// that reason; test.unit counts as before.
func TestIntegrationTestMustTouchASandbox(t *testing.T) {
	realKey := "integration-key-real-000"
	var events []wire.Event
	add := func(sb, kind string, lc *wire.Lifecycle, cmd *wire.Command) {
		events = append(events, wire.Event{Seq: int64(len(events) + 1), Time: time.Now(), SandboxID: sb, Kind: kind, Lifecycle: lc, Command: cmd})
	}
	fp := keyFingerprint(realKey)
	add("sb-it", "lifecycle", &wire.Lifecycle{Method: "POST", Path: "/v1/sandboxes", Status: 202, KeyFingerprint: fp}, nil)
	add("sb-it", "command", nil, &wire.Command{ID: "c1", Command: "echo hi"})
	add("sb-it", "lifecycle", &wire.Lifecycle{Method: "DELETE", Path: "/v1/sandboxes/sb-it", Status: 204, KeyFingerprint: fp}, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_mock/audit") {
			_ = json.NewEncoder(w).Encode(osb.AuditLog{Events: events})
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	e, _ := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: strings.TrimPrefix(srv.URL, "http://"), APIKey: "platform-key-0123456789", AdminToken: "admin"})

	junit := `<testsuite name="t" tests="4" failures="0" errors="0"><testcase name="a"/><testcase name="b"/><testcase name="c"/><testcase name="d"/></testsuite>`
	inv := func(field, key string) *invocation {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		require.NoError(t, os.MkdirAll(out, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(out, "junit.xml"), []byte(junit), 0o644))
		for _, f := range []string{"stdout.log", "stderr.log"} {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
		}
		return &invocation{name: field, launch: launch{Field: field, Dir: dir, OutDir: out, KeyFP: keyFingerprint(key), RelDir: "evidence/" + field, Witness: e.witness(),
			Res: &subject.Result{ExitCode: 0, StdoutPath: filepath.Join(dir, "stdout.log"), StderrPath: filepath.Join(dir, "stderr.log")}}}
	}
	run := func(unit, integ *invocation) error {
		s := &scenario{env: e, name: "tests", invs: []*invocation{unit, integ}}
		return testsPassed(context.WithValue(context.Background(), scenarioKey{}, s), 1, 1)
	}

	// A fake: both commands only write a passing JUnit file; the server saw nothing from them.
	err := run(inv("test.unit", "unit-key-fake-000000"), inv("test.integration", "integration-key-fake-000"))
	require.Error(t, err)
	assert.False(t, isHarnessFault(err))
	assert.Contains(t, err.Error(), "test.integration reports 4 passed")
	assert.Contains(t, err.Error(), "the server saw its key create no sandbox")
	assert.NotContains(t, err.Error(), "test.unit", "the unit tests count as before")

	// The real one: create, a command, delete with its own key.
	assert.NoError(t, run(inv("test.unit", "unit-key-fake-000000"), inv("test.integration", realKey)))
}
