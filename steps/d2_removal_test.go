package steps

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// TestD2RemovalOnARealTarget: on a real target the harness deletes the
// subject's sandbox, and the subject's recording proxy answers that sandbox
// as an unknown one from the moment the DELETE is sent (observe.Proxy.Vanish),
// so the subject meets a vanished sandbox at once however long the target
// takes to remove it (Docker: kill, remove, sidecar; seconds under load).
// A removal whose 204 came after the subject ended is therefore still the
// drill's fault (it used to be left unmeasured, when the subject could see the
// sandbox during its removal); a DELETE the target refused is a fault of the
// target: a harness error, never the subject's failure. Found by
// TestDockerCalibration (cmd/acceptance).
func TestD2RemovalOnARealTarget(t *testing.T) {
	e, _ := blameEnv(t, core.Target{Kind: rubric.TargetReal, Domain: "127.0.0.1:9", APIKey: "k-platform"})
	start := time.Now().Add(-time.Minute)
	mk := func(doneAfter time.Duration, faultErr string) (context.Context, *scenario) {
		s := &scenario{env: e, name: "The sandbox disappears mid-run", tags: []string{"@drill:D2"}, ids: []string{"D2"}}
		s.run = &subjectRun{key: "d2", launch: launch{Started: start, Res: &subject.Result{ExitCode: 0, Duration: 10 * time.Second}},
			faultSandbox: "sb-1", faultAt: start.Add(2 * time.Second), faultCause: "POST /files/upload → 200", faultErr: faultErr}
		if doneAfter > 0 {
			s.run.faultDone = start.Add(doneAfter)
		}
		return context.WithValue(context.Background(), scenarioKey{}, s), s
	}

	ctx, s := mk(12*time.Second, "") // 204 two seconds after the subject ended
	require.NoError(t, sandboxDisappeared(ctx), "the subject met the vanished sandbox from the DELETE's start")
	assert.Contains(t, s.notes, "the harness deleted it on the target, which took 10s (DELETE → 204); the subject's recording proxy answered it as an unknown sandbox from the DELETE's start")

	ctx, _ = mk(5*time.Second, "")
	assert.NoError(t, sandboxDisappeared(ctx), "a removal that took effect mid-run is the drill's fault")

	ctx, _ = mk(0, "DELETE /v1/sandboxes/sb-1 HTTP/1.1 → HTTP/1.1 500 Internal Server Error: {\"code\":\"DOCKER::SANDBOX_DELETE_FAILED\"}")
	err := sandboxDisappeared(ctx)
	require.Error(t, err)
	assert.True(t, isHarnessFault(err), "a DELETE the target refused is the target's fault: %v", err)
	assert.Contains(t, err.Error(), "the target did not remove it")
}
