package steps

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/harness/summary"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// TestSandboxGoneCountsOnlyTheRunsOwnDelete: "the subject destroyed its
// sandbox" is judged by identity. A DELETE in the sandbox's audit that was
// not made with the run's key (the grader's clean-up, another caller) does
// not count as the subject's; the run's own DELETE does. (A never-deleting
// submission once scored differently in a class than alone.)
func TestSandboxGoneCountsOnlyTheRunsOwnDelete(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"code":"SANDBOX::NOT_FOUND","message":"gone"}`, http.StatusNotFound)
	}))
	defer srv.Close()
	e, _ := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: strings.TrimPrefix(srv.URL, "http://"), APIKey: "k-platform"})
	del := wire.Event{SandboxID: "sb-1", Kind: wire.KindLifecycle, Lifecycle: &wire.Lifecycle{Method: "DELETE", Status: 204}}
	mk := func(attempts []wire.Event) context.Context {
		s := &scenario{env: e, name: "sales", tags: []string{"@milestone:M2"}, ids: []string{"M2"}}
		r := &subjectRun{key: "sales", launch: launch{Dir: t.TempDir(), RelDir: "evidence/subject-sales", Res: &subject.Result{ExitCode: 0}}}
		r.sum = &summary.Summary{SandboxID: "sb-1"}
		r.Witness = command.Recorded{What: command.Saw{
			Events: []wire.Event{del}, // the sandbox's events: deleted, by someone
			Calls:  attempts,          // the run's own calls
		}}
		s.run = r
		return context.WithValue(context.Background(), scenarioKey{}, s)
	}
	err := sandboxGone(mk(nil))
	require.Error(t, err, "a DELETE not made with the run's key is not the subject's")
	assert.Contains(t, err.Error(), "with the run's key")
	assert.False(t, isHarnessFault(err))

	assert.NoError(t, sandboxGone(mk([]wire.Event{del})), "the run's own DELETE, then 404")
}

// TestCreateFailedByServer: a create of the run's key the bundled server
// answered with a 5xx no drill injected is the target's fault; a refused
// create (4xx), an injected fault and other calls are not.
func TestCreateFailedByServer(t *testing.T) {
	ev := func(method, path string, status int, fault bool) wire.Event {
		e := wire.Event{Kind: wire.KindLifecycle, Lifecycle: &wire.Lifecycle{Method: method, Path: path, Status: status}}
		if fault {
			e.Fault = &wire.Fault{}
		}
		return e
	}
	assert.Empty(t, command.CreateFailedByServer([]wire.Event{ev("POST", "/v1/sandboxes", 202, false), ev("DELETE", "/v1/sandboxes/x", 500, false)}))
	assert.Empty(t, command.CreateFailedByServer([]wire.Event{ev("POST", "/v1/sandboxes", 429, false), ev("POST", "/v1/sandboxes", 400, false)}))
	assert.Empty(t, command.CreateFailedByServer([]wire.Event{ev("POST", "/v1/sandboxes", 503, true)}), "an injected fault is the drill's")
	assert.Equal(t, "POST /v1/sandboxes → 500", command.CreateFailedByServer([]wire.Event{ev("POST", "/v1/sandboxes", 202, false), ev("POST", "/v1/sandboxes", 500, false)}))
}
