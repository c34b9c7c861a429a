package steps

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// TestSandboxGoneWithNoDeleteIsTheTargets replays the docker calibration's
// run 8 (2026-12-01 20:24:26–30, the reference's first M1 run): its sandbox
// answered 200, then 404, 3 s after its create with a 1200 s TTL; the
// recording proxy saw no DELETE by the run's key before that, no drill was
// on it, the control plane's log has no DELETE of it and its container is
// gone from the engine. The subject's failure after that is a harness error
// saying what was seen, never the submission's. Each thing that explains the
// disappearance (the subject's own DELETE, a drill, the TTL, a DELETE in the
// control plane's log, a container still there) or a target that cannot say
// leaves the run the subject's to answer for.
func TestSandboxGoneWithNoDeleteIsTheTargets(t *testing.T) {
	const id = "ba9c838a-bc8d-415d-bde6-4811f3df67a3"
	t0 := time.Date(2026, 12, 1, 20, 24, 26, 692e6, time.UTC)
	create := func(timeout any) observe.Call {
		body, _ := json.Marshal(map[string]any{"image": map[string]string{"uri": "python:3.12"}, "timeout": timeout})
		return observe.Call{Time: t0, Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: id, Body: body}
	}
	call := func(d time.Duration, method, path string, status int) observe.Call {
		return observe.Call{Time: t0.Add(d), Method: method, Path: path, Status: status, SandboxID: id}
	}
	seen := []observe.Call{
		call(1028*time.Millisecond, "GET", "/v1/sandboxes/"+id+"/endpoints/44772?use_server_proxy=false", 200),
		call(2686*time.Millisecond, "GET", "/v1/sandboxes/"+id, 200),
		call(3013*time.Millisecond, "GET", "/v1/sandboxes/"+id, 404),
		call(3033*time.Millisecond, "DELETE", "/v1/sandboxes/"+id, 404),
	}
	gone := func(context.Context, string) (SandboxFate, error) {
		return SandboxFate{LogNames: 22, ContainerGone: true}, nil
	}
	run := func(exit int, fate func(context.Context, string) (SandboxFate, error), drill string, calls ...observe.Call) envRun {
		r := &subjectRun{fate: fate, faultSandbox: drill}
		r.res = &subject.Result{ExitCode: exit}
		r.observed = calls
		return envRun{&Env{}, r} // a real target's run: the one check every step makes (Env.usable)
	}
	withCreate := func(timeout any, more ...observe.Call) []observe.Call {
		return append([]observe.Call{create(timeout)}, more...)
	}

	// The submission's other commands (an integration test's sandbox) get the same rule.
	e, _ := blameEnv(t, core.Target{Kind: rubric.TargetReal, Domain: "127.0.0.1:9", SandboxFate: gone})
	inv := preloadedInvocation(t, e, "test.integration", 1, nil)
	inv.observed = withCreate(1200, seen...)
	ierr := e.invocationUsable(context.Background(), inv)
	require.Error(t, ierr)
	assert.True(t, isHarnessFault(ierr), "%v", ierr)
	assert.Contains(t, ierr.Error(), "the submission's test.integration command then exited 1")
	inv = preloadedInvocation(t, e, "test.integration", 1, nil)
	inv.observed = withCreate(1200, append([]observe.Call{call(2*time.Second, "DELETE", "/v1/sandboxes/"+id, 204)}, seen...)...)
	assert.NoError(t, e.invocationUsable(context.Background(), inv), "the command's own DELETE went through first")

	err := run(1, gone, "", withCreate(1200, seen...)...).usable(context.Background())
	require.Error(t, err)
	assert.True(t, isHarnessFault(err), "the target's or the machine's fault: %v", err)
	for _, want := range []string{id, "disappeared 3.013s after its create", "its TTL was 20m0s", "GET /v1/sandboxes/" + id + " → 404 at 20:24:29.705",
		"no DELETE from anyone", "none in the control plane's log (22 lines name it)", "the engine holds no container of it", "not of the submission"} {
		assert.Contains(t, err.Error(), want)
	}

	assert.NoError(t, run(0, gone, "", withCreate(1200, seen...)...).usable(context.Background()), "a subject that coped (exit 0) is judged as usual")
	assert.NoError(t, run(1, nil, "", withCreate(1200, seen...)...).usable(context.Background()), "a target that cannot say (the bundled server, a URL target) changes nothing")
	assert.NoError(t, run(1, gone, id, withCreate(1200, seen...)...).usable(context.Background()), "the drill's sandbox is the drill's doing")
	own := append([]observe.Call{call(2*time.Second, "DELETE", "/v1/sandboxes/"+id, 204)}, seen...)
	assert.NoError(t, run(1, gone, "", withCreate(1200, own...)...).usable(context.Background()), "the subject's own DELETE went through first")
	assert.NoError(t, run(1, gone, "", withCreate(2, seen...)...).usable(context.Background()), "gone after its TTL: the server expired it as asked")
	assert.Error(t, run(1, gone, "", withCreate(nil, seen...)...).usable(context.Background()), "no timeout: no expiry, so still unexplained")
	assert.NoError(t, run(1, func(context.Context, string) (SandboxFate, error) {
		return SandboxFate{Deletes: []string{`"DELETE /v1/sandboxes/` + id + ` HTTP/1.1" 204`}, ContainerGone: true}, nil
	}, "", withCreate(1200, seen...)...).usable(context.Background()), "someone deleted it through the control plane")
	assert.NoError(t, run(1, func(context.Context, string) (SandboxFate, error) {
		return SandboxFate{LogNames: 3}, nil
	}, "", withCreate(1200, seen...)...).usable(context.Background()), "its container is still there: the 404 is not a removal")
	assert.NoError(t, run(1, func(context.Context, string) (SandboxFate, error) {
		return SandboxFate{}, errors.New("engine down")
	}, "", withCreate(1200, seen...)...).usable(context.Background()), "the target cannot say")
	assert.NoError(t, run(1, gone, "", withCreate(1200, seen[:2]...)...).usable(context.Background()), "never found gone by the subject")
}

// envRun pairs a run with the Env that judges it (Env.usable).
type envRun struct {
	e *Env
	r *subjectRun
}

func (x envRun) usable(ctx context.Context) error { return x.e.usable(ctx, x.r) }
