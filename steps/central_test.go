package steps

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// analysisIn are the events of an analysis that ran in sandbox sb: the
// input uploaded and a command run.
func analysisIn(sb string) []wire.Event {
	zero := 0
	return []wire.Event{
		{Time: time.Now(), SandboxID: sb, Kind: "file", File: &wire.File{Op: "upload", Path: "/workspace/input.csv"}},
		{Time: time.Now(), SandboxID: sb, Kind: "command", Command: &wire.Command{Command: "python3 analyze.py", ExitCode: &zero}},
	}
}

// TestNothingRanEarnsNothing: a do-nothing submission earns nothing: it creates
// no sandbox, writes a clean report.md and summary.json and exits 1. The
// scenarios whose steps pass on those files (the outputs' secret scan, the
// injected data's "still reports") record their entries not measured, and
// the submission scores 0 with no entry passed. The same files from a run
// that did its analysis in a sandbox pass.
func TestNothingRanEarnsNothing(t *testing.T) {
	target := core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9", AdminToken: "admin-token"}
	write := func(r *subjectRun) {
		require.NoError(t, os.WriteFile(filepath.Join(r.OutDir, "report.md"), []byte("# Report\n\nrows: 10\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(r.OutDir, "summary.json"), []byte(`{"row_count":10}`), 0o644))
	}
	leak := pickleNamed(t, "No key appears in what the subject writes or prints")
	reports := pickleNamed(t, "The subject still reports on data carrying instructions")
	require.ElementsMatch(t, []string{"credential", "M3"}, rubricIDs(leak.tags))

	e, res := blameEnv(t, target)
	r := preloaded(t, e, "sales", 1, nil, nil)
	write(r)
	walk(e, leak, r, noSecretInOutputs)
	ri := preloaded(t, e, "injection", 1, nil, nil)
	write(ri)
	walk(e, reports, ri, reportNonEmpty)
	for _, id := range []string{"credential", "M3", "D4", "function"} {
		o := outcomeOf(t, res, id)
		assert.Equal(t, rubric.NotMeasured, o.Verdict, "%s: %s", id, o.Reason)
		assert.Contains(t, o.Reason, "the subject created no sandbox (it exited 1)", id)
	}
	sum := rubric.Evaluate(rubric.Course, rubric.TargetMock, res.Outcomes())
	for id, rr := range sum.Results {
		assert.NotEqual(t, rubric.Passed, rr.Verdict, "%s passed on nothing: %s", id, rr.Reason)
	}
	assert.Zero(t, sum.Score.Earned, "a submission that created no sandbox earns nothing")

	// The same files from a run that worked in its sandbox: the passes stand.
	e, res = blameEnv(t, target)
	r = preloaded(t, e, "sales", 0, []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)}, analysisIn("sb-1"))
	write(r)
	walk(e, leak, r, noSecretInOutputs)
	for _, id := range []string{"credential", "M3"} {
		assert.Equal(t, rubric.Passed, outcomeOf(t, res, id).Verdict, id)
	}

	// A sandbox created and never used exercises nothing either.
	e, res = blameEnv(t, target)
	r = preloaded(t, e, "sales", 0, []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)},
		[]wire.Event{{Time: time.Now(), SandboxID: "sb-1", Kind: "file", File: &wire.File{Op: "final-manifest", Path: "/workspace"}}})
	write(r)
	walk(e, leak, r, noSecretInOutputs)
	o := outcomeOf(t, res, "credential")
	assert.Equal(t, rubric.NotMeasured, o.Verdict, o.Reason)
	assert.Contains(t, o.Reason, "ran no command and moved no file")
}

// TestSandboxSecretsFailEveryRun: planted secrets the server found in a
// run's sandbox (its environment, here) fail credential and M3 after any
// scenario that used the run, the agent's included, with an outcome of
// their own; a clean run records nothing.
func TestSandboxSecretsFailEveryRun(t *testing.T) {
	target := core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9", AdminToken: "admin-token"}
	pk := pickleNamed(t, "No key and no environment dump reaches the model context")
	require.Contains(t, pk.tags, "@agent")

	e, res := blameEnv(t, target)
	events := append(analysisIn("sb-1"),
		wire.Event{Time: time.Now(), SandboxID: "sb-1", Kind: "canary", Canary: &wire.Canary{Label: "data_api_token_abc", Location: "env", Where: "CAPSTONE_DATA_API_TOKEN"}},
		wire.Event{Time: time.Now(), SandboxID: "sb-1", Kind: "canary", Canary: &wire.Canary{Label: "scan", Location: "scan"}})
	r := preloaded(t, e, "agent-sales", 0, []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)}, events)
	s := &scenario{env: e, name: pk.name, tags: pk.tags, ids: rubricIDs(pk.tags), run: r}
	e.scanSandboxesOf(t.Context(), s)
	e.scanSandboxesOf(t.Context(), s) // once per run
	var got []rubric.Outcome
	for _, o := range res.Outcomes() {
		got = append(got, o)
	}
	require.Len(t, got, 2, "credential and M3, once")
	for _, o := range got {
		assert.Contains(t, []rubric.ID{rubric.Credential, rubric.M3}, o.ID)
		assert.Equal(t, rubric.Failed, o.Verdict)
		assert.Equal(t, "sandbox scan of run agent-sales", o.Scenario)
		assert.Contains(t, o.Reason, "data_api_token_abc in env (CAPSTONE_DATA_API_TOKEN) of sb-1")
	}
	sum := rubric.Evaluate(rubric.Course, rubric.TargetMock, res.Outcomes())
	assert.Equal(t, []rubric.ID{rubric.Credential}, sum.SecurityFailed)

	e, res = blameEnv(t, target)
	r = preloaded(t, e, "agent-sales", 0, []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)},
		append(analysisIn("sb-1"), wire.Event{Time: time.Now(), SandboxID: "sb-1", Kind: "canary", Canary: &wire.Canary{Label: "scan", Location: "scan"}}))
	e.scanSandboxesOf(t.Context(), &scenario{env: e, name: pk.name, tags: pk.tags, ids: rubricIDs(pk.tags), run: r})
	assert.Empty(t, res.Outcomes())

	// A call of the agent's sandbox to the data API that the vault gave no
	// credential fails too, as in the plain vault scenario; one it gave one
	// does not.
	e, res = blameEnv(t, target)
	e.opt.Stubs.DataAPIURL = "http://data.capstone.test:8080/v1"
	call := func(injected bool) wire.Event {
		return wire.Event{Time: time.Now(), SandboxID: "sb-1", Kind: "egress_request", EgressRequest: &wire.EgressRequest{
			Host: "data.capstone.test", Method: "GET", Path: "/v1/rates", Status: 200, Authorization: "present", Injected: injected}}
	}
	scan := wire.Event{Time: time.Now(), SandboxID: "sb-1", Kind: "canary", Canary: &wire.Canary{Label: "scan", Location: "scan"}}
	r = preloaded(t, e, "agent-vault", 0, []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)},
		append(analysisIn("sb-1"), scan, call(true), call(false)))
	e.scanSandboxesOf(t.Context(), &scenario{env: e, name: pk.name, tags: pk.tags, ids: rubricIDs(pk.tags), run: r})
	require.Len(t, res.Outcomes(), 2)
	for _, o := range res.Outcomes() {
		assert.Equal(t, rubric.Failed, o.Verdict)
		assert.Contains(t, o.Reason, "sandbox sb-1 called the data API (GET /v1/rates) and the vault injected no credential")
	}
	e, res = blameEnv(t, target)
	e.opt.Stubs.DataAPIURL = "http://data.capstone.test:8080/v1"
	r = preloaded(t, e, "agent-vault", 0, []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)},
		append(analysisIn("sb-1"), scan, call(true)))
	e.scanSandboxesOf(t.Context(), &scenario{env: e, name: pk.name, tags: pk.tags, ids: rubricIDs(pk.tags), run: r})
	assert.Empty(t, res.Outcomes())
}
