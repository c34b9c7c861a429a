package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// TestSandboxGoneWithNoDeleteIsTheTargets replays the docker calibration's
// run 8 (2026-12-01 20:24:26–30, the reference's first M1 run): its sandbox
// answered 200, then 404, 3 s after its create with a 1200 s TTL; the
// recording proxy saw no DELETE by the run's key before that, no drill was
// on it, the control plane's log has no DELETE of it and its container is
// gone from the engine. The command's failure after that is a harness error
// saying what was seen, never the submission's. Each thing that explains the
// disappearance (the command's own DELETE, a drill, the TTL, a DELETE in the
// control plane's log, a container still there) or a target that cannot say
// leaves the run the submission's to answer for.
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
	type fateFn = func(context.Context, string) (SandboxFate, error)
	gone := func(context.Context, string) (SandboxFate, error) {
		return SandboxFate{LogNames: 22, ContainerGone: true}, nil
	}
	withCreate := func(timeout any, more ...observe.Call) []observe.Call {
		return append([]observe.Call{create(timeout)}, more...)
	}
	own := append([]observe.Call{call(2*time.Second, "DELETE", "/v1/sandboxes/"+id, 204)}, seen...)
	for _, tc := range []struct {
		name  string
		field string
		exit  int
		fate  fateFn
		drill string
		calls []observe.Call
		want  []string // nil: judged as usual
	}{
		{"gone with no DELETE", "run", 1, gone, "", withCreate(1200, seen...), []string{id, "disappeared 3.013s after its create", "its TTL was 20m0s",
			"GET /v1/sandboxes/" + id + " → 404 at 20:24:29.705", "no DELETE from anyone", "none in the control plane's log (22 lines name it)",
			"the engine holds no container of it", "the subject then exited 1", "not of the submission"}},
		{"another command too", "test.integration", 1, gone, "", withCreate(1200, seen...), []string{"the submission's test.integration command then exited 1"}},
		{"its own DELETE first (command)", "test.integration", 1, gone, "", withCreate(1200, own...), nil},
		{"coped (exit 0)", "run", 0, gone, "", withCreate(1200, seen...), nil},
		{"a target that cannot say", "run", 1, nil, "", withCreate(1200, seen...), nil},
		{"the drill's sandbox", "run", 1, gone, id, withCreate(1200, seen...), nil},
		{"its own DELETE first", "run", 1, gone, "", withCreate(1200, own...), nil},
		{"gone after its TTL", "run", 1, gone, "", withCreate(2, seen...), nil},
		{"no timeout: no expiry", "run", 1, gone, "", withCreate(nil, seen...), []string{"no TTL"}},
		{"deleted through the control plane", "run", 1, func(context.Context, string) (SandboxFate, error) {
			return SandboxFate{Deletes: []string{`"DELETE /v1/sandboxes/` + id + ` HTTP/1.1" 204`}, ContainerGone: true}, nil
		}, "", withCreate(1200, seen...), nil},
		{"its container is still there", "run", 1, func(context.Context, string) (SandboxFate, error) { return SandboxFate{LogNames: 3}, nil },
			"", withCreate(1200, seen...), nil},
		{"the target errs", "run", 1, func(context.Context, string) (SandboxFate, error) { return SandboxFate{}, errors.New("engine down") },
			"", withCreate(1200, seen...), nil},
		{"never found gone", "run", 1, gone, "", withCreate(1200, seen[:2]...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &Record{Field: tc.field, Res: &subject.Result{ExitCode: tc.exit}, Observed: tc.calls, Fate: tc.fate,
				DrillSandbox: tc.drill, Witness: ProxyWitness{}}
			err := rec.Judge(context.Background())
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, IsHarnessFault(err), "the target's or the machine's fault: %v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestJudgeOrder: Judge applies its rules once, in one order, to a run and
// to any other command alike; each row is one rule winning over the later
// ones, or the submission's own failure.
func TestJudgeOrder(t *testing.T) {
	broken := &confine.Status{Mode: "confined", BrokenCount: 1, Broken: []confine.Refusal{{
		Time: time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC), Addr: "127.0.0.1:33331 POST /v1/sandboxes",
		Reason: "the upstream's answer broke off under the guard: unexpected EOF"}}}
	lc := func(method, path string, status int, fault bool) wire.Event {
		ev := wire.Event{Kind: "lifecycle", Lifecycle: &wire.Lifecycle{Method: method, Path: path, Status: status}}
		if fault {
			ev.Fault = &wire.Fault{}
		}
		return ev
	}
	failedCreate := Recorded{What: Saw{Calls: []wire.Event{lc("POST", "/v1/sandboxes", 500, false)}}}
	injected := Recorded{What: Saw{Calls: []wire.Event{lc("POST", "/v1/sandboxes", 503, true)}}}
	refused := Recorded{What: Saw{Calls: []wire.Event{lc("POST", "/v1/sandboxes", 429, false), lc("DELETE", "/v1/sandboxes/x", 500, false)}}}
	for _, field := range []string{"run", "contract", "reap", "test.unit", "test.integration"} {
		for _, tc := range []struct {
			name    string
			rec     func() *Record
			harness bool
			is      error // errors.Is
			want    string
		}{
			{"could not run", func() *Record { return &Record{Err: errors.New("no such file")} }, true, nil, "the harness could not run"},
			{"no result", func() *Record { return &Record{} }, true, nil, "did not run"},
			{"budget spent", func() *Record {
				return &Record{BudgetSpent: true, Res: &subject.Result{TimedOut: true, ExitCode: -1}, Witness: failedCreate}
			}, false, ErrBudgetSpent, ""},
			{"timed out", func() *Record {
				return &Record{Res: &subject.Result{TimedOut: true, ExitCode: -1, Confinement: broken}, Witness: failedCreate}
			}, false, ErrSubjectTimedOut, ""},
			{"exit 0 after everything", func() *Record {
				return &Record{Res: &subject.Result{ExitCode: 0, Confinement: broken}, Witness: failedCreate}
			}, false, nil, ""},
			{"grader broke an exchange", func() *Record {
				return &Record{Res: &subject.Result{ExitCode: 1, Confinement: broken}, Witness: failedCreate}
			}, true, nil,
				"the grader's confinement broke 1 of its exchanges (first at 23:30:00.000: 127.0.0.1:33331 POST /v1/sandboxes the upstream's answer broke off under the guard: unexpected EOF)"},
			{"target 5xx'd a create", func() *Record { return &Record{Res: &subject.Result{ExitCode: 1}, Witness: failedCreate} }, true, nil, "(POST /v1/sandboxes → 500)"},
			{"an injected 5xx is the drill's", func() *Record { return &Record{Res: &subject.Result{ExitCode: 1}, Witness: injected} }, false, nil, ""},
			{"refused creates and other 5xx are the submission's", func() *Record { return &Record{Res: &subject.Result{ExitCode: 1}, Witness: refused} }, false, nil, ""},
			{"the submission's failure", func() *Record {
				return &Record{Res: &subject.Result{ExitCode: 2, Confinement: &confine.Status{Mode: "confined", RefusedCount: 3}}}
			}, false, nil, ""},
		} {
			t.Run(fmt.Sprintf("%s/%s", field, tc.name), func(t *testing.T) {
				rec := tc.rec() // a fresh one per field (nothing read yet)
				rec.Field = field
				err := rec.Judge(context.Background())
				switch {
				case tc.harness:
					require.Error(t, err)
					assert.True(t, IsHarnessFault(err), "%v", err)
					assert.Contains(t, err.Error(), tc.want)
				case tc.is != nil:
					require.ErrorIs(t, err, tc.is)
					assert.False(t, IsHarnessFault(err), "%v", err)
				default:
					assert.NoError(t, err)
				}
			})
		}
	}
}

// TestTargetFailureNamesTheAnswer: on a real target the recording proxy's
// answer to the failed create is quoted.
func TestTargetFailureNamesTheAnswer(t *testing.T) {
	failed := observe.Call{Time: time.Now(), Method: "POST", Path: "/v1/sandboxes", Status: 500,
		Answer: `{"code":"DOCKER::SANDBOX_START_FAILED","message":"Egress sidecar did not become ready within 30s"}`}
	rec := &Record{Field: "run", Res: &subject.Result{ExitCode: 1}, Observed: []observe.Call{failed}, Witness: ProxyWitness{}}
	err := rec.Judge(context.Background())
	require.Error(t, err)
	assert.True(t, IsHarnessFault(err))
	assert.Contains(t, err.Error(), "the target failed the subject's create (POST /v1/sandboxes → 500 {\"code\":\"DOCKER::SANDBOX_START_FAILED\"")
	rec = &Record{Field: "reap", Res: &subject.Result{ExitCode: 1}, Observed: []observe.Call{failed}, Witness: ProxyWitness{}}
	assert.Contains(t, rec.Judge(context.Background()).Error(), "the target failed a create of the submission's reap command (POST /v1/sandboxes → 500")
}

// TestSandboxStoppedByTheMachineIsTheTargets: a sandbox of the command whose
// container the engine says stopped before its TTL, with no DELETE from
// anyone before then, makes the command's failure a harness error whether
// its container is gone or still there, and the reason carries what the
// engine said (a signal, an OOM kill, its own restart, a removal). The
// subject's own DELETE after the stop (a `finally` cleaning up) does not
// explain it; its DELETE before the stop, a drill's sandbox or a DELETE in
// the control plane's log that is not the key's (a drill's), the TTL, a
// container still running, and a target that cannot say leave the run the
// submission's to answer for.
func TestSandboxStoppedByTheMachineIsTheTargets(t *testing.T) {
	const id = "5e1f0a3c-8d2b-4c11-9a7e-2f6b1d0c9e44"
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	body, _ := json.Marshal(map[string]any{"timeout": 1200})
	create := observe.Call{Time: t0, Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: id, Body: body}
	call := func(d time.Duration, method, path string, status int) observe.Call {
		return observe.Call{Time: t0.Add(d), Method: method, Path: path, Status: status, SandboxID: id}
	}
	stoppedAt := t0.Add(9 * time.Second)
	running := []observe.Call{create, call(2*time.Second, "GET", "/v1/sandboxes/"+id, 200)}
	ownAfter := append(slices.Clone(running), call(11*time.Second, "DELETE", "/v1/sandboxes/"+id, 204))
	ownBefore := append(slices.Clone(running), call(8900*time.Millisecond, "DELETE", "/v1/sandboxes/"+id, 204))
	logDelete := `"DELETE /v1/sandboxes/` + id + ` HTTP/1.1" 204`
	const killed = "container sandbox-x is exited, killed by SIGKILL (exit code 137), finished at 05:00:09.000"
	const oom = "container sandbox-x is exited, OOM-killed (State.OOMKilled true, exit code 137)"
	const restart = "container sandbox-x is exited (exit code 255); the engine itself restarted at 05:00:10.000"
	const removed = "its events: kill (SIGKILL) at 05:00:09.000, die (exit code 137) at 05:00:09.000, destroy at 05:00:09.100"
	fate := func(f SandboxFate) func(context.Context, string) (SandboxFate, error) {
		return func(context.Context, string) (SandboxFate, error) { return f, nil }
	}
	stopped := func(said string, gone bool, deletes ...string) func(context.Context, string) (SandboxFate, error) {
		return fate(SandboxFate{Stopped: true, StoppedAt: stoppedAt, EngineSaid: said, ContainerGone: gone, LogNames: 4, Deletes: deletes})
	}
	for _, tc := range []struct {
		name  string
		fate  func(context.Context, string) (SandboxFate, error)
		calls []observe.Call
		drill string
		ttl   any
		want  []string // nil: judged as usual
	}{
		{name: "docker kill, container still there", fate: stopped(killed, false), calls: running,
			want: []string{id, "stopped 9s after its create", "its TTL was 20m0s", "no DELETE from anyone", "the engine says: " + killed,
				"its container is still in the engine, stopped", "the subject then exited 1", "not of the submission"}},
		{name: "OOM kill", fate: stopped(oom, false), calls: running, want: []string{"the engine says: " + oom}},
		{name: "engine restart", fate: stopped(restart, false), calls: running, want: []string{"the engine says: " + restart}},
		{name: "removed outside the control plane", fate: stopped(removed, true), calls: running,
			want: []string{"the engine says: " + removed, "the engine holds no container of it now"}},
		{name: "the subject's own DELETE after the stop", fate: stopped(killed, false, logDelete), calls: ownAfter,
			want: []string{"the engine says: " + killed, "(4 lines name it)"}},
		{name: "the key's DELETE before the stop", fate: stopped(killed, true, logDelete), calls: ownBefore},
		{name: "a drill's DELETE in the control plane's log", fate: stopped(removed, true, logDelete), calls: running},
		{name: "the drill's own sandbox", fate: stopped(killed, false), calls: running, drill: id},
		{name: "expired by its TTL", fate: stopped(killed, false), calls: running, ttl: 5},
		{name: "still running", fate: fate(SandboxFate{LogNames: 4}), calls: running},
		{name: "the engine cannot say when", fate: fate(SandboxFate{Stopped: true, EngineSaid: killed}), calls: running},
		{name: "the target cannot say", fate: func(context.Context, string) (SandboxFate, error) { return SandboxFate{}, errors.New("engine down") }, calls: running},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := slices.Clone(tc.calls)
			if tc.ttl != nil {
				b, _ := json.Marshal(map[string]any{"timeout": tc.ttl})
				calls[0].Body = b
			}
			rec := &Record{Field: "run", Res: &subject.Result{ExitCode: 1}, Observed: calls, Fate: tc.fate,
				DrillSandbox: tc.drill, Witness: ProxyWitness{}}
			err := rec.Judge(context.Background())
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, IsHarnessFault(err), "the target's or the machine's fault: %v", err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestDrillsSandboxCutIsNotTheGraders: a command stream of the sandbox a
// drill removed on purpose ends when its container stops, and the box's
// guard sees its upstream's answer break off (on a real target the
// recording proxy relays the cut): the drill's doing, so the run is judged
// on its result (D2 on docker was a harness error for every submission).
// Any other break, or a break of that sandbox's exchange the grader itself
// made, stays the grader's fault.
func TestDrillsSandboxCutIsNotTheGraders(t *testing.T) {
	at := time.Date(2026, 12, 2, 23, 12, 14, 0, time.UTC)
	cut := func(path string) confine.Refusal {
		return confine.Refusal{Time: at, Addr: "127.0.0.1:44937 POST " + path, Reason: "the upstream's answer broke off under the guard: unexpected EOF"}
	}
	rec := func(drill string, count int, broken ...confine.Refusal) *Record {
		return &Record{Field: "run", DrillSandbox: drill, Res: &subject.Result{ExitCode: 1,
			Confinement: &confine.Status{Mode: "confined", BrokenCount: count, Broken: broken}}}
	}
	ctx := context.Background()
	assert.NoError(t, rec("sb-1", 1, cut("/sandboxes/sb-1/proxy/44772/command")).Judge(ctx), "the drill's sandbox's stream")
	assert.NoError(t, rec("sb-1", 1, cut("/v1/sandboxes/sb-1?x=1")).Judge(ctx))

	for name, r := range map[string]*Record{
		"no drill":                       rec("", 1, cut("/sandboxes/sb-1/proxy/44772/command")),
		"another sandbox":                rec("sb-1", 1, cut("/sandboxes/sb-10/proxy/44772/command")),
		"a lifecycle call":               rec("sb-1", 1, cut("/v1/sandboxes")),
		"the grader's own upstream fail": rec("sb-1", 1, confine.Refusal{Time: at, Addr: "127.0.0.1:44937 POST /sandboxes/sb-1/proxy/44772/command", Reason: "the guard's upstream failed: dial tcp: connection refused"}),
		"more than the box lists":        rec("sb-1", 2, cut("/sandboxes/sb-1/proxy/44772/command")),
	} {
		err := r.Judge(ctx)
		assert.True(t, IsHarnessFault(err), "%s: the grader's break: %v", name, err)
	}
	err := rec("sb-1", 2, cut("/sandboxes/sb-1/proxy/44772/command"), cut("/sandboxes/sb-2/proxy/44772/command")).Judge(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "broke 1 of its exchanges (first at 23:12:14.000: 127.0.0.1:44937 POST /sandboxes/sb-2/proxy/44772/command")
}
