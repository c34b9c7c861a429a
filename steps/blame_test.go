package steps

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// blameEnv is an Env whose results are inspected by the test; target is
// the server the steps talk to.
func blameEnv(t *testing.T, target core.Target) (*Env, *rubric.Results) {
	t.Helper()
	res := rubric.NewResults(rubric.Course)
	e, err := NewEnv(core.SuiteInput{
		Results:        res,
		Submission:     &submission.Submission{Dir: t.TempDir(), Source: submission.SourceManifest, Manifest: submission.Manifest{Run: "sh run.sh"}},
		BundleDir:      t.TempDir(),
		Target:         target,
		SubjectTimeout: time.Minute,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e, res
}

func outcomeOf(t *testing.T, res *rubric.Results, id string) rubric.Outcome {
	t.Helper()
	for _, o := range res.Outcomes() {
		if string(o.ID) == id {
			return o
		}
	}
	t.Fatalf("no outcome recorded for %s", id)
	return rubric.Outcome{}
}

// TestRecordOutcomeBlame feeds recordOutcome each kind of step error: the
// submission's failure fails, the harness's is a harness error, and a
// scenario feeding a security criterion fails only on a violated security
// property (any other failure of the submission leaves it not measured).
func TestRecordOutcomeBlame(t *testing.T) {
	timeout := fmt.Errorf("%w (limit reached after 5m0s)", errSubjectTimedOut)
	for _, tc := range []struct {
		name     string
		tags     []string
		err      error
		verdict  rubric.Verdict
		category rubric.Category
		reason   string
	}{
		{"submission failure, plain entry", []string{"@criterion:function"}, failf("report.md is empty"), rubric.Failed, "", "report.md is empty"},
		{"harness fault, plain entry", []string{"@criterion:function"}, harnessf("reading the audit trail: 500"), rubric.HarnessError, "", "harness error: reading the audit trail: 500"},
		{"harness fault, security entry", []string{"@criterion:injection", "@drill:D4"}, harnessf("reading the audit trail: connection refused"), rubric.HarnessError, "", "connection refused"},
		{"wrapped harness fault", []string{"@milestone:M1"}, failf("run 1: %w", harnessf("the harness could not run the subject")), rubric.HarnessError, "", "run 1: the harness could not run the subject"},
		{"violation, security entry", []string{"@criterion:credential", "@milestone:M3"}, violationf("secrets leaked into the subject's outputs: platform API key in stderr"), rubric.Failed, "", "platform API key in stderr"},
		{"non-security failure, security entry", []string{"@criterion:network", "@milestone:M3"}, failf("summary.json is missing from the subject's output"), rubric.NotMeasured, rubric.CategoryPreconditionUnmet, "not a security property"},
		{"timeout, security entry", []string{"@criterion:network"}, timeout, rubric.NotMeasured, rubric.CategoryTimeout, "timed out"},
		{"timeout, plain entry", []string{"@criterion:function"}, timeout, rubric.Failed, "", "timed out: the subject ran past"},
		{"violation, plain entry", []string{"@criterion:budget"}, violationf("x"), rubric.Failed, "", "x"},
		{"budget spent before the command, plain entry", []string{"@criterion:function"}, fmt.Errorf("%w (15m0s of command time) before this run", errBudgetSpent), rubric.NotMeasured, rubric.CategoryTimeout, "not started"},
		{"budget spent before the command, security entry", []string{"@criterion:network"}, failf("run 2: %w", fmt.Errorf("%w (15m0s of command time) before this run", errBudgetSpent)), rubric.NotMeasured, rubric.CategoryTimeout, "not started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, res := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9"})
			s := &scenario{env: e, name: tc.name, tags: tc.tags, ids: rubricIDs(tc.tags)}
			e.recordOutcome(s, tc.err, nil)
			for _, id := range s.ids {
				o := outcomeOf(t, res, id)
				assert.Equal(t, tc.verdict, o.Verdict, "%s: %s", id, o.Reason)
				assert.Equal(t, tc.category, o.Category, id)
				assert.Contains(t, o.Reason, tc.reason, id)
			}
		})
	}
	// A skip with a recorded reason stays not measured; an interrupt is never blamed.
	e, res := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9"})
	s := &scenario{env: e, name: "interrupted", tags: []string{"@criterion:network"}, ids: []string{"network"}}
	e.recordOutcome(s, violationf("x"), context.Canceled)
	assert.Equal(t, rubric.NotMeasured, outcomeOf(t, res, "network").Verdict)
	assert.False(t, isHarnessFault(errors.New("x")))
	assert.False(t, isViolation(godog.ErrSkip))
}

// TestAuditAnswering500IsHarnessError: a security check whose audit read
// fails (the bundled server answers 500) is the harness's error: the entry
// is a harness error, the run incomplete with exit 2, never not_passed and
// never a security failure.
func TestAuditAnswering500IsHarnessError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_mock/audit") {
			http.Error(w, `{"code":"INTERNAL","message":"audit store unavailable"}`, http.StatusInternalServerError)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	e, res := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: strings.TrimPrefix(srv.URL, "http://"), APIKey: "k-platform", AdminToken: "admin-token"})

	tags := []string{"@drill:D4", "@criterion:injection"}
	s := &scenario{env: e, name: "Instructions inside the data are treated as data", tags: tags, ids: rubricIDs(tags)}
	s.run = &subjectRun{key: "injection", launch: launch{Dir: t.TempDir(), RelDir: "evidence/subject-injection", KeyFP: keyFingerprint("k-subject"),
		Res: &subject.Result{ExitCode: 0}, Witness: e.witness()}}
	ctx := context.WithValue(context.Background(), scenarioKey{}, s)

	err := noInjectedCommand(ctx)
	require.Error(t, err)
	assert.True(t, isHarnessFault(err), "%v", err)
	assert.Contains(t, err.Error(), "500")
	e.recordOutcome(s, err, nil)

	for _, id := range []string{"injection", "D4"} {
		o := outcomeOf(t, res, id)
		assert.Equal(t, rubric.HarnessError, o.Verdict, "%s: %s", id, o.Reason)
	}
	sum := rubric.Evaluate(rubric.Course, rubric.TargetMock, res.Outcomes())
	assert.Equal(t, rubric.OverallIncomplete, sum.Verdict, sum.Why)
	assert.Equal(t, rubric.ExitHarnessError, sum.ExitCode())
	assert.Empty(t, sum.SecurityFailed)
	assert.Empty(t, sum.Failed)
	assert.Contains(t, sum.Errored, rubric.ID("injection"))
}

// TestScanEveryRun: any run a scenario made (here a drill's, whose
// scenario feeds neither credential nor M3) is scanned for the run's key,
// the platform key and the data API token in its stdout, stderr and
// outputs; a leak fails credential and M3 naming the run and the file, a
// clean run records nothing, and each run is scanned once.
func TestScanEveryRun(t *testing.T) {
	e, res := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9", APIKey: "platform-key-0123456789"})
	e.opt.Stubs.DataAPIToken = "data-api-token-abcdef"
	mk := func(key, stderr string, out map[string]string) *subjectRun {
		dir := filepath.Join(e.opt.BundleDir, "evidence", "subject-"+key)
		r := &subjectRun{key: key, fixture: key, launch: launch{Dir: dir, RelDir: filepath.Join("evidence", "subject-"+key), OutDir: filepath.Join(dir, "out"), APIKey: "subject-key-" + key}}
		require.NoError(t, os.MkdirAll(r.OutDir, 0o755))
		r.Res = &subject.Result{StdoutPath: filepath.Join(dir, "stdout.txt"), StderrPath: filepath.Join(dir, "stderr.txt")}
		require.NoError(t, os.WriteFile(r.Res.StdoutPath, []byte("ok\n"), 0o644))
		require.NoError(t, os.WriteFile(r.Res.StderrPath, []byte(stderr), 0o644))
		for n, c := range out {
			require.NoError(t, os.WriteFile(filepath.Join(r.OutDir, n), []byte(c), 0o644))
		}
		return r
	}
	leaky := mk("d1-sales", "request failed: headers={'OPEN-SANDBOX-API-KEY': 'platform-key-0123456789'}\n",
		map[string]string{"summary.json": `{"error":{"message":"Bearer data-api-token-abcdef refused"}}`})
	clean := mk("broken", "KeyError: 'price'\n", map[string]string{"report.md": "# no data rows\n"})

	s := &scenario{env: e, name: "drill", tags: []string{"@drill:D1", "@criterion:observability"}, ids: []string{"D1", "observability"}, run: leaky, runs: []*subjectRun{clean}}
	e.scanRunsOf(s)
	e.scanRunsOf(s) // once per run
	var got []rubric.Outcome
	for _, o := range res.Outcomes() {
		got = append(got, o)
	}
	require.Len(t, got, 2, "credential and M3, once: %+v", got)
	for _, o := range got {
		assert.Contains(t, []rubric.ID{rubric.Credential, rubric.M3}, o.ID)
		assert.Equal(t, rubric.Failed, o.Verdict)
		assert.Contains(t, o.Reason, `run "d1-sales"`)
		assert.Contains(t, o.Reason, "platform API key in evidence/subject-d1-sales/stderr.txt")
		assert.Contains(t, o.Reason, "data API token in evidence/subject-d1-sales/out/summary.json")
		assert.NotContains(t, o.Reason, "platform-key-0123456789", "the reason names the secret, never its value")
	}
}
