package steps

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// TestTargetFailedCreateIsNotTheSubjects: on a real target a create the
// server answered with a server error (seen in TestDockerCalibration:
// "500 DOCKER::SANDBOX_START_FAILED: Egress sidecar did not become ready
// within 30s", on a loaded machine) leaves the subject nothing to do: when it
// then fails, the run is a harness error naming the target's answer, never
// the submission's failure. A subject that got past it (another create
// succeeded, exit 0) is judged as usual; a failed run without such a create
// is the subject's.
func TestTargetFailedCreateIsNotTheSubjects(t *testing.T) {
	failed := observe.Call{Time: time.Now(), Method: "POST", Path: "/v1/sandboxes", Status: 500,
		Answer: `{"code":"DOCKER::SANDBOX_START_FAILED","message":"Egress sidecar did not become ready within 30s"}`}
	run := func(exit int, calls ...observe.Call) *subjectRun {
		r := &subjectRun{}
		r.Res = &subject.Result{ExitCode: exit}
		r.Observed = calls
		return r
	}
	usable := func(r *subjectRun) error { return r.judge(context.Background()) }
	err := usable(run(1, failed))
	require.Error(t, err)
	assert.True(t, isHarnessFault(err), "the target's fault: %v", err)
	assert.Contains(t, err.Error(), "POST /v1/sandboxes → 500")
	assert.Contains(t, err.Error(), "DOCKER::SANDBOX_START_FAILED")

	assert.NoError(t, usable(run(0, failed, observe.Call{Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "s"})),
		"a subject that got past it is judged as usual")
	assert.NoError(t, usable(run(1, observe.Call{Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "s"})),
		"a failed run without a failed create is the subject's to answer for")
	assert.NoError(t, usable(run(1, observe.Call{Method: "POST", Path: "/v1/sandboxes", Status: 400})),
		"a create the server refused as a client error is the subject's")
}

// TestM1LoopCreateFailedByTheServer: one check (Env.usable) decides, at
// every step that judges a run, that a run failing after the bundled server
// answered its create with a 5xx no drill injected is the target's fault. M1's
// three-run loop (which judges each run itself) gives a harness error, not
// "run 2 created no sandbox".
func TestM1LoopCreateFailedByTheServer(t *testing.T) {
	pk := pickleNamed(t, "Three runs in a row each close the loop and leave nothing behind")
	e, res := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9", AdminToken: "admin-token"})
	ok := func(key, sb string) *subjectRun {
		return preloaded(t, e, key, 0, []wire.Event{
			lifecycle(sb, "POST", "/v1/sandboxes", 202),
			lifecycle(sb, "DELETE", "/v1/sandboxes/"+sb, 204),
			lifecycle(sb, "GET", "/v1/sandboxes/"+sb, 404),
		}, nil)
	}
	failed := preloaded(t, e, "sales-run2", 1, []wire.Event{lifecycle("", "POST", "/v1/sandboxes", 500)}, nil)
	s := &scenario{env: e, name: pk.name, tags: pk.tags, ids: rubricIDs(pk.tags),
		runs: []*subjectRun{ok("sales", "sb-1"), failed, ok("sales-run3", "sb-3")}}
	s.run = s.runs[2]
	ctx := context.WithValue(context.Background(), scenarioKey{}, s)

	for name, step := range map[string]func(context.Context) error{"destroyed": eachRunDestroyed, "closed loop": eachRunClosedLoop} {
		err := step(ctx)
		require.Error(t, err, name)
		assert.True(t, isHarnessFault(err), "%s: %v", name, err)
		assert.Contains(t, err.Error(), "run 2: the target failed the subject's create (POST /v1/sandboxes → 500)", name)
	}
	e.recordOutcome(s, eachRunDestroyed(ctx), nil)
	o := outcomeOf(t, res, "M1")
	assert.Equal(t, rubric.HarnessError, o.Verdict, o.Reason)

	// An injected 500 is the drill's, and a refused create (4xx) the subject's.
	for _, ev := range []wire.Event{lifecycle("", "POST", "/v1/sandboxes", 400), func() wire.Event {
		ev := lifecycle("", "POST", "/v1/sandboxes", 500)
		ev.Fault = &wire.Fault{}
		return ev
	}()} {
		r := preloaded(t, e, fmt.Sprintf("sales-%d", ev.Lifecycle.Status), 1, []wire.Event{ev}, nil)
		assert.NoError(t, r.judge(context.Background()), "%d (fault %v)", ev.Lifecycle.Status, ev.Fault != nil)
	}
}

// preloadedInvocation is an invocation of the submission's field command
// that exited exit, whose calls (by its key) are already loaded.
func preloadedInvocation(t *testing.T, e *Env, field string, exit int, calls []wire.Event) *invocation {
	t.Helper()
	dir := t.TempDir()
	inv := &invocation{launch: launch{Dir: dir, RelDir: "evidence/subject-" + field, OutDir: dir, Field: field}, name: "subject-" + field}
	inv.Res = &subject.Result{ExitCode: exit, StdoutPath: dir + "/stdout.log", StderrPath: dir + "/stderr.log"}
	inv.Witness = command.Recorded{What: command.Saw{Calls: calls}}
	return inv
}

// TestInvocationCreateFailedByTheServer: the rule of a subject run holds for
// the submission's other commands too (contract, reap, test.unit,
// test.integration). One that exited non-zero after the target answered its
// create with a 5xx no drill injected is a harness error, on the bundled
// server and on a real target alike; an injected 500 or a refused (4xx)
// create stays the submission's to handle.
func TestInvocationCreateFailedByTheServer(t *testing.T) {
	for _, target := range []core.Target{
		{Kind: rubric.TargetMock, Domain: "127.0.0.1:9", AdminToken: "admin-token"},
		{Kind: rubric.TargetReal, Domain: "127.0.0.1:9"},
	} {
		e, _ := blameEnv(t, target)
		failed := preloadedInvocation(t, e, "test.integration", 1, []wire.Event{lifecycle("", "POST", "/v1/sandboxes", 500)})
		err := failed.Judge(context.Background())
		require.Error(t, err, target.Kind)
		assert.True(t, isHarnessFault(err), "%s: %v", target.Kind, err)
		assert.Contains(t, err.Error(), "the target failed a create of the submission's test.integration command (POST /v1/sandboxes → 500), and the command then exited 1")

		// Through a step: M4's tests and M0's contract check.
		s := &scenario{env: e, invs: []*invocation{
			preloadedInvocation(t, e, "test.unit", 0, nil), failed}}
		err = testsPassed(context.WithValue(context.Background(), scenarioKey{}, s), 1, 1)
		require.Error(t, err)
		assert.True(t, isHarnessFault(err), "testsPassed: %v", err)

		injected := lifecycle("", "POST", "/v1/sandboxes", 500)
		injected.Fault = &wire.Fault{}
		for _, ev := range []wire.Event{lifecycle("", "POST", "/v1/sandboxes", 400), injected, lifecycle("sb", "DELETE", "/v1/sandboxes/sb", 500)} {
			inv := preloadedInvocation(t, e, "contract", 1, []wire.Event{ev})
			assert.NoError(t, inv.Judge(context.Background()), "%s %d (fault %v)", ev.Lifecycle.Method, ev.Lifecycle.Status, ev.Fault != nil)
		}
		assert.NoError(t, preloadedInvocation(t, e, "reap", 0, []wire.Event{lifecycle("", "POST", "/v1/sandboxes", 500)}).Judge(context.Background()),
			"a command that coped (exit 0) is judged as usual")
	}
}

// TestExchangeBrokenByTheGraderIsNotTheSubmissions: a subject run or a
// command that exited non-zero after the grader's own confinement broke one
// of its exchanges (CI, 2026-12-01: the reference's first create got a bare
// EOF through the box) is a harness error naming the broken exchange; a run
// that coped with it (exit 0) is judged as usual.
func TestExchangeBrokenByTheGraderIsNotTheSubmissions(t *testing.T) {
	e, res := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9", AdminToken: "admin-token"})
	broken := &confine.Status{Mode: "confined", BrokenCount: 1, Broken: []confine.Refusal{{
		Time: time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC), Addr: "127.0.0.1:33331 POST /v1/sandboxes",
		Reason: "the upstream's answer broke off under the guard: unexpected EOF"}}}

	r := preloaded(t, e, "semicolon", 1, nil, nil)
	r.Res.Confinement = broken
	err := r.judge(context.Background())
	require.Error(t, err)
	assert.True(t, isHarnessFault(err), "%v", err)
	assert.Contains(t, err.Error(), "the grader's confinement broke 1 of its exchanges (first at 23:30:00.000: 127.0.0.1:33331 POST /v1/sandboxes the upstream's answer broke off under the guard: unexpected EOF), and the subject then exited 1")

	pk := pickleNamed(t, "Awkward inputs are read correctly: semicolon")
	s := &scenario{env: e, name: pk.name, tags: pk.tags, ids: rubricIDs(pk.tags), runs: []*subjectRun{r}, run: r}
	e.recordOutcome(s, err, nil)
	o := outcomeOf(t, res, "accuracy")
	assert.Equal(t, rubric.HarnessError, o.Verdict, o.Reason)

	inv := preloadedInvocation(t, e, "contract", 2, nil)
	inv.Res.Confinement = broken
	ierr := inv.Judge(context.Background())
	require.Error(t, ierr)
	assert.True(t, isHarnessFault(ierr), "%v", ierr)
	assert.Contains(t, ierr.Error(), "and the submission's contract command then exited 2")

	coped := preloaded(t, e, "semicolon-2", 0, nil, nil)
	coped.Res.Confinement = broken
	assert.NoError(t, coped.judge(context.Background()), "a run that coped is judged as usual")
	clean := preloaded(t, e, "semicolon-3", 1, nil, nil)
	clean.Res.Confinement = &confine.Status{Mode: "confined", RefusedCount: 3}
	assert.NoError(t, clean.judge(context.Background()), "refusals of the command's own connections are not the grader's fault")
}
