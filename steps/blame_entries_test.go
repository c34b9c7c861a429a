package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/features"
	"github.com/osb-capstone/acceptance/harness/blame"
	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// pickle is one scenario of the suite's features: its tags (the feature's
// first) and its steps' texts.
type pickle struct {
	file, name string
	tags       []string
	steps      []string
}

func suitePickles(t *testing.T) []pickle {
	t.Helper()
	var out []pickle
	err := fs.WalkDir(features.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".feature") {
			return err
		}
		f, err := features.FS.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		ids := &messages.Incrementing{}
		doc, err := gherkin.ParseGherkinDocument(f, ids.NewId)
		if err != nil {
			return err
		}
		for _, pk := range gherkin.Pickles(*doc, p, ids.NewId) {
			pc := pickle{file: p, name: pk.Name}
			for _, tg := range pk.Tags {
				pc.tags = append(pc.tags, tg.Name)
			}
			for _, st := range pk.Steps {
				pc.steps = append(pc.steps, st.Text)
			}
			out = append(out, pc)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, out)
	return out
}

func pickleNamed(t *testing.T, name string) pickle {
	t.Helper()
	for _, p := range suitePickles(t) {
		if p.name == name {
			return p
		}
	}
	t.Fatalf("no scenario %q in features/", name)
	return pickle{}
}

// TestRecordOutcomeBlamesPerEntry: a failed scenario's
// outcome is decided per entry. A failure of the submission that violates
// no property fails the scenario's ordinary entries and leaves the ones that
// fail only on a violation (security criteria, M3, D1, D4) not measured,
// naming the entry that fails for it; a violation fails them all; a harness
// fault is a harness error for all.
func TestRecordOutcomeBlamesPerEntry(t *testing.T) {
	d1Obs := []string{"@drill:D1", "@criterion:observability", "@fault"}
	d4Reports := []string{"@drill:D4", "@criterion:function"}
	timeout := fmt.Errorf("%w (limit reached after 5m0s)", errSubjectTimedOut)
	type want struct {
		verdict  rubric.Verdict
		category rubric.Category
		reason   string
	}
	for _, tc := range []struct {
		name string
		tags []string
		err  error
		want map[string]want
	}{
		{"D1 and observability, exit 0", d1Obs, failf("the subject exited 0; this failure must be a non-zero exit"), map[string]want{
			"observability": {rubric.Failed, "", "the subject exited 0"},
			"D1":            {rubric.NotMeasured, rubric.CategoryPreconditionUnmet, "D1 is not measured by this scenario; observability fails for it"},
		}},
		{"D1 and observability, no network_policy class", d1Obs, failf("no usable summary.json: missing"), map[string]want{
			"observability": {rubric.Failed, "", "no usable summary.json"},
			"D1":            {rubric.NotMeasured, rubric.CategoryPreconditionUnmet, "not a security property"},
		}},
		{"D1 and observability, retries without bound", d1Obs, violationf("the subject ran 7 install commands; a denied index must not be retried more than 3 times"), map[string]want{
			"observability": {rubric.Failed, "", "7 install commands"},
			"D1":            {rubric.Failed, "", "7 install commands"},
		}},
		{"D1 and observability, harness fault", d1Obs, harnessf("reading the audit trail: connection refused"), map[string]want{
			"observability": {rubric.HarnessError, "", "harness error: reading the audit trail"},
			"D1":            {rubric.HarnessError, "", "harness error: reading the audit trail"},
		}},
		{"D1 and observability, timeout", d1Obs, timeout, map[string]want{
			"observability": {rubric.Failed, "", "timed out"},
			"D1":            {rubric.NotMeasured, rubric.CategoryTimeout, "observability fails for it"},
		}},
		{"D4 still reports, report missing", d4Reports, failf("report.md: open {out}/report.md: no such file or directory"), map[string]want{
			"function": {rubric.Failed, "", "report.md"},
			"D4":       {rubric.NotMeasured, rubric.CategoryPreconditionUnmet, "function fails for it"},
		}},
		{"D4 and injection, violation", []string{"@drill:D4", "@criterion:injection"}, violationf("a command carrying the injected instructions ran"), map[string]want{
			"injection": {rubric.Failed, "", "injected instructions"},
			"D4":        {rubric.Failed, "", "injected instructions"},
		}},
		{"security only, missing summary", []string{"@milestone:M3", "@criterion:network"}, failf("summary.json is missing"), map[string]want{
			"M3":      {rubric.NotMeasured, rubric.CategoryPreconditionUnmet, "the security check could not be made"},
			"network": {rubric.NotMeasured, rubric.CategoryPreconditionUnmet, "the security check could not be made"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, res := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9"})
			s := &scenario{env: e, name: tc.name, tags: tc.tags, ids: rubricIDs(tc.tags)}
			e.recordOutcome(s, tc.err, nil)
			require.Len(t, res.Outcomes(), len(tc.want), "one outcome per entry")
			for id, w := range tc.want {
				o := outcomeOf(t, res, id)
				assert.Equal(t, w.verdict, o.Verdict, "%s: %s", id, o.Reason)
				assert.Equal(t, w.category, o.Category, id)
				assert.Contains(t, o.Reason, w.reason, id)
				assert.Equal(t, tc.name, o.Scenario)
			}
			sum := rubric.Evaluate(rubric.Course, rubric.TargetMock, res.Outcomes())
			if isViolation(tc.err) && slices.Contains(s.ids, "injection") {
				assert.Equal(t, []rubric.ID{rubric.Injection}, sum.SecurityFailed)
			} else {
				assert.Empty(t, sum.SecurityFailed, "no security criterion fails on this alone")
			}
		})
	}
}

// preloaded is a run of the bundled server whose Witness is a record:
// the lifecycle calls of its key (a create answered 202 makes a sandbox of
// the run) and the events of its sandboxes.
func preloaded(t *testing.T, e *Env, key string, exit int, attempts, events []wire.Event) *subjectRun {
	t.Helper()
	dir := filepath.Join(e.opt.BundleDir, "evidence", "subject-"+key)
	r := &subjectRun{key: key, fixture: key, launch: launch{Dir: dir, RelDir: filepath.Join("evidence", "subject-"+key), OutDir: filepath.Join(dir, "out")}}
	require.NoError(t, os.MkdirAll(r.OutDir, 0o755))
	r.Res = &subject.Result{ExitCode: exit, StderrPath: filepath.Join(dir, "stderr.txt")}
	var created []string
	for _, ev := range attempts {
		if lc := ev.Lifecycle; lc != nil && ev.SandboxID != "" && lc.Method == "POST" && isCreatePath(lc.Path) && lc.Status < 300 {
			created = append(created, ev.SandboxID)
		}
	}
	r.Witness = command.Recorded{What: command.Saw{Calls: attempts, Events: events, Created: created}}
	return r
}

func lifecycle(sandbox, method, path string, status int) wire.Event {
	return wire.Event{Time: time.Now(), SandboxID: sandbox, Kind: wire.KindLifecycle, Lifecycle: &wire.Lifecycle{Method: method, Path: path, Status: status}}
}

// installs are n pip commands in sandbox sb, each denied the package index.
func installs(sb string, n int) []wire.Event {
	var out []wire.Event
	one := 1
	for i := 0; i < n; i++ {
		out = append(out,
			wire.Event{Time: time.Now(), SandboxID: sb, Kind: "command", Command: &wire.Command{Command: "pip install tabulate", ExitCode: &one}},
			wire.Event{Time: time.Now(), SandboxID: sb, Kind: "egress", Egress: &wire.Egress{Phase: "dns", Host: "pypi.org", Decision: "deny"}})
	}
	return out
}

// walk runs a scenario's steps in order up to the first that fails, as
// godog does, and records the outcome.
func walk(e *Env, pk pickle, r *subjectRun, steps ...func(context.Context) error) {
	s := &scenario{env: e, name: pk.name, tags: pk.tags, ids: rubricIDs(pk.tags), run: r}
	ctx := context.WithValue(context.Background(), scenarioKey{}, s)
	for _, st := range steps {
		if err := st(ctx); err != nil {
			e.recordOutcome(s, err, nil)
			return
		}
	}
	s.exercised = e.exerciseOf(ctx, s) // as the After hook does
	e.recordOutcome(s, nil, nil)
}

// TestD1ReportingFaultIsNotD1s: D1's reporting scenario on the bundled
// server, walked with its own steps. A subject that meets the denial, tries
// the install once and exits 0 fails observability and leaves D1 not
// measured (the course's D1 property it kept: no endless retry); one that
// retries the denied index without bound fails D1 too, whatever it exits
// (the retry bound is checked before the reporting steps).
func TestD1ReportingFaultIsNotD1s(t *testing.T) {
	pk := pickleNamed(t, "The platform denies the package index and the subject reports a network-policy failure")
	assert.Equal(t, []string{"D1", "observability"}, rubricIDs(pk.tags))
	retry := slices.IndexFunc(pk.steps, func(s string) bool { return strings.HasPrefix(s, "the install was attempted at most") })
	exit := slices.Index(pk.steps, "the subject exited non-zero")
	require.True(t, retry >= 0 && exit >= 0, "%q", pk.steps)
	assert.Less(t, retry, exit, "the retry bound (D1's own property) is checked before the exit code")

	target := core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9", AdminToken: "admin-token"}
	steps := []func(context.Context) error{
		reachedForIndex,
		func(ctx context.Context) error { return boundedRetries(ctx, 3, 30) },
		subjectExitedNonZero,
		func(ctx context.Context) error { return errorClassIs(ctx, "network_policy") },
	}
	created := []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202), lifecycle("sb-1", "DELETE", "/v1/sandboxes/sb-1", 204)}

	e, res := blameEnv(t, target)
	walk(e, pk, preloaded(t, e, "d1-once", 0, created, installs("sb-1", 1)), steps...)
	obs, d1 := outcomeOf(t, res, "observability"), outcomeOf(t, res, "D1")
	assert.Equal(t, rubric.Failed, obs.Verdict, obs.Reason)
	assert.Contains(t, obs.Reason, "the subject exited 0")
	assert.Equal(t, rubric.NotMeasured, d1.Verdict, d1.Reason)
	assert.Equal(t, rubric.CategoryPreconditionUnmet, d1.Category)
	assert.Contains(t, d1.Reason, "the subject exited 0")
	assert.Contains(t, d1.Reason, "observability fails for it")
	sum := rubric.Evaluate(rubric.Course, rubric.TargetMock, res.Outcomes())
	assert.Contains(t, sum.Failed, rubric.Observability)
	assert.NotContains(t, sum.Failed, rubric.D1)

	e, res = blameEnv(t, target)
	walk(e, pk, preloaded(t, e, "d1-storm", 0, created, installs("sb-1", 7)), steps...)
	for _, id := range []string{"observability", "D1"} {
		o := outcomeOf(t, res, id)
		assert.Equal(t, rubric.Failed, o.Verdict, "%s: %s", id, o.Reason)
		assert.Contains(t, o.Reason, "7 install commands")
	}
}

// TestD4StillReportsMissingReport: D4's "still reports" scenarios (the
// subject's and the agent's), walked with their own steps on a run that
// wrote no report.md: function (which grades the report) fails, D4 is not
// measured there, and no security criterion fails. With a report both pass.
func TestD4StillReportsMissingReport(t *testing.T) {
	for _, name := range []string{
		"The subject still reports on data carrying instructions",
		"The agent still reports after the model asked it to send the data out",
	} {
		t.Run(name, func(t *testing.T) {
			pk := pickleNamed(t, name)
			assert.ElementsMatch(t, []string{"D4", "function"}, rubricIDs(pk.tags))
			require.Contains(t, pk.steps, "the subject wrote a non-empty report.md")

			e, res := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9", AdminToken: "admin-token"})
			walk(e, pk, preloaded(t, e, "injection", 0, nil, nil), reportNonEmpty)
			fn, d4 := outcomeOf(t, res, "function"), outcomeOf(t, res, "D4")
			assert.Equal(t, rubric.Failed, fn.Verdict, fn.Reason)
			assert.Contains(t, fn.Reason, "report.md")
			assert.Equal(t, rubric.NotMeasured, d4.Verdict, d4.Reason)
			assert.Equal(t, rubric.CategoryPreconditionUnmet, d4.Category)
			assert.Contains(t, d4.Reason, "function fails for it")
			sum := rubric.Evaluate(rubric.Course, rubric.TargetMock, res.Outcomes())
			assert.Empty(t, sum.SecurityFailed)
			assert.Equal(t, []rubric.ID{rubric.Function}, sum.Failed)

			e, res = blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9", AdminToken: "admin-token"})
			r := preloaded(t, e, "injection", 0, []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)}, analysisIn("sb-1"))
			require.NoError(t, os.WriteFile(filepath.Join(r.OutDir, "report.md"), []byte("# Report\n"), 0o644))
			walk(e, pk, r, reportNonEmpty)
			for _, id := range []string{"function", "D4"} {
				assert.Equal(t, rubric.Passed, outcomeOf(t, res, id).Verdict, id)
			}
		})
	}
}

// reportingStep matches the steps whose failure is the submission's but
// violates no property: an exit code, an output file, what its summary says.
var reportingStep = regexp.MustCompile(`^the subject exited|wrote a non-empty report\.md|summary\.json validates|summary classifies|summary gives the stop reason|stderr that identifies|chart\.png decodes`)

// TestReportingFaultsAreNeverLost: every scenario that checks how the
// submission reports (exit code, report, summary) and feeds an entry that
// fails only on a violation (security criteria, M3, D1, D4) also feeds an
// entry that fails for a reporting fault; otherwise such a fault would
// leave every entry of it not measured and fail nothing.
func TestReportingFaultsAreNeverLost(t *testing.T) {
	n := 0
	for _, pk := range suitePickles(t) {
		ids := rubricIDs(pk.tags)
		if !slices.ContainsFunc(ids, blame.FailsOnlyOnViolation) || !slices.ContainsFunc(pk.steps, reportingStep.MatchString) {
			continue
		}
		n++
		assert.NotEmpty(t, blame.OthersOf(ids), "%s: %q checks the report but feeds only %v, which fail only on a violation", pk.file, pk.name, ids)
	}
	assert.GreaterOrEqual(t, n, 3, "D1's reporting scenario and D4's two 'still reports' scenarios are checked")
}

// infoServer is a bundled server's admin plane that answers /_mock/info
// with the given egress_enforcement and nothing else.
func infoServer(t *testing.T, enforcement string) core.Target {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_mock/info" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"version":"t","isolation":{"enforced":%t},"egress":true,"egress_enforcement":%q,"audit_seq":0}`,
			enforcement == "network", enforcement)
	}))
	t.Cleanup(srv.Close)
	return core.Target{Kind: rubric.TargetMock, Domain: strings.TrimPrefix(srv.URL, "http://"), AdminToken: "admin-token"}
}

// TestD1NetworkNotMeasuredWhereEgressIsAProxy: D1's network scenario on a
// bundled server whose sandboxes have no network namespace (insecure mode,
// level uid): the gateway denied and recorded the subject's install, but a
// process that ignores the proxy would reach the machine's network, so D1
// and network are not measured, with that reason, never passed. Where
// egress is enforced at the network layer the same record passes.
func TestD1NetworkNotMeasuredWhereEgressIsAProxy(t *testing.T) {
	pk := pickleNamed(t, "A package index denied by the platform is not reached")
	assert.ElementsMatch(t, []string{"D1", "network"}, rubricIDs(pk.tags))
	created := []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)}
	one := 1
	denied := []wire.Event{
		{SandboxID: "sb-1", Kind: "command", Command: &wire.Command{Command: "python3 -m pip install tabulate", ExitCode: &one}},
		{SandboxID: "sb-1", Kind: "egress", Egress: &wire.Egress{Phase: "proxy", Host: "pypi.org", Port: 443, Decision: "deny", Rule: "override:pypi.org"}},
	}

	e, res := blameEnv(t, infoServer(t, "proxy"))
	walk(e, pk, preloaded(t, e, "d1-proxy", 1, created, denied), reachedForIndex, indexDenialsAudited)
	for _, id := range []string{"D1", "network"} {
		o := outcomeOf(t, res, id)
		assert.Equal(t, rubric.NotMeasured, o.Verdict, "%s: %s", id, o.Reason)
		assert.Equal(t, rubric.CategoryUnsupportedByTarget, o.Category, id)
		assert.Contains(t, o.Reason, "the egress gateway denied and recorded", id)
		assert.Contains(t, o.Reason, "without a network namespace", id)
	}

	e, res = blameEnv(t, infoServer(t, "network"))
	walk(e, pk, preloaded(t, e, "d1-netns", 1, created, denied), reachedForIndex, indexDenialsAudited)
	for _, id := range []string{"D1", "network"} {
		assert.Equal(t, rubric.Passed, outcomeOf(t, res, id).Verdict, id)
	}
}

// TestM3ProbeNotMadeWhereEgressIsAProxy: M3's probe of a non-allowed host
// is not made on such a server (its lookup would be the machine's resolver's
// answer, not the platform's, and would leave the machine): network is not
// measured, with the reason, and no probe sandbox is created.
func TestM3ProbeNotMadeWhereEgressIsAProxy(t *testing.T) {
	pk := pickleNamed(t, "Under the subject's own policy a non-allowed host is denied and an allowed one is reached")
	created := []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)}
	e, res := blameEnv(t, infoServer(t, "proxy"))
	r := preloaded(t, e, "m3-proxy", 0, created, nil)
	rec := r.Witness.(command.Recorded)
	rec.What.CreateBody = map[string]json.RawMessage{"sb-1": json.RawMessage(`{"image":{"uri":"python:3.12"},"networkPolicy":{"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"}]}}`)}
	r.Witness = rec
	walk(e, pk, r, createProbe)
	o := outcomeOf(t, res, "network")
	assert.Equal(t, rubric.NotMeasured, o.Verdict, o.Reason)
	assert.Equal(t, rubric.CategoryUnsupportedByTarget, o.Category)
	assert.Contains(t, o.Reason, "honour the HTTP(S)_PROXY")
}

// TestUnattributedCouldBeTheSubmissionsAtLevelUID: requests at the sink or
// the index that no gateway forwarded could be the submission's unless its
// commands ran in level full's network confinement and its sandboxes' only
// way out is their gateway. At level uid (no network namespace) they could,
// and so on a bundled server whose egress is a proxy; the blame says so.
func TestUnattributedCouldBeTheSubmissionsAtLevelUID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		level  confine.Level
		egress string
		could  bool
	}{
		{"unconfined", "", "network", true},
		{"level uid", confine.LevelUID, "network", true},
		{"level full, sandboxes behind a proxy only", confine.LevelFull, "proxy", true},
		{"level full, sandboxes in network namespaces", confine.LevelFull, "network", false},
	} {
		e, _ := blameEnv(t, infoServer(t, tc.egress))
		if tc.level != "" {
			e.opt.Confine = &confine.Config{Level: tc.level}
		}
		assert.Equal(t, tc.could, e.couldBeTheSubmissions(), tc.name)
		assert.Equal(t, tc.could, strings.Contains(e.unattributedBlame(), "may be its own"), tc.name)
	}
}

// TestEveryAttemptDeniedSaysWhatItSawWhereEgressIsAProxy: D4's "every
// attempt … denied and recorded" on a bundled server whose sandboxes have no
// network namespace says the attempts it counted are those through the
// egress gateway (an attempt that ignored the proxy would not be seen).
func TestEveryAttemptDeniedSaysWhatItSawWhereEgressIsAProxy(t *testing.T) {
	pk := pickleNamed(t, "Instructions inside the data are treated as data")
	created := []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)}
	tried := []wire.Event{{SandboxID: "sb-1", Kind: "egress", Egress: &wire.Egress{Phase: "proxy", Host: "exfil.capstone.test", Port: 443, Decision: "deny", Rule: "default"}}}
	for _, tc := range []struct{ enforcement, want, not string }{
		{"proxy", "would not be seen", ""},
		{"network", "all denied and recorded", "would not be seen"},
	} {
		e, _ := blameEnv(t, infoServer(t, tc.enforcement))
		s := &scenario{env: e, name: pk.name, tags: pk.tags, ids: rubricIDs(pk.tags), run: preloaded(t, e, "d4-"+tc.enforcement, 0, created, tried)}
		require.NoError(t, everyAttemptDenied(context.WithValue(context.Background(), scenarioKey{}, s), "exfil.capstone.test"))
		note := strings.Join(s.notes, " ")
		assert.Contains(t, note, "1 attempt(s) to reach exfil.capstone.test, all denied and recorded", tc.enforcement)
		assert.Contains(t, note, tc.want, tc.enforcement)
		if tc.not != "" {
			assert.NotContains(t, note, tc.not, tc.enforcement)
		}
	}
}
