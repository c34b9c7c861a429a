//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/stubs"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
)

// TestRunM0M1EndToEnd grades a complete submission (testdata/submission:
// the reference pipeline with raw-HTTP contract and reap scripts) on M0 and
// M1, both measured on the submission's own calls.
func TestRunM0M1EndToEnd(t *testing.T) {
	requireSandboxes(t)
	gradingEnv(t)
	class := filepath.Join(t.TempDir(), "class")
	var stdout, stderr bytes.Buffer
	code := gradeMain(runArgs(t, class, "--tags", "@milestone:M0,@milestone:M1", "--seed", "7", testdataSubmission(t, "submission")), &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	out := filepath.Join(class, "01-submission")

	// Only M0 and M1 ran: everything else the bundled server could measure was
	// not, so the run is incomplete — not passed, not failed.
	require.Equal(t, rubric.ExitIncomplete, code, "exit code")
	b := readBundle(t, out)
	assert.Equal(t, rubric.OverallIncomplete, b.doc.Verdict)
	assert.Equal(t, rubric.ExitIncomplete, b.doc.ExitCode)
	assert.Empty(t, b.doc.Aborted)
	assert.Equal(t, rubric.TargetMock, b.doc.TargetKind)
	assert.Equal(t, int64(7), b.doc.Seed)
	require.NotNil(t, b.doc.Preflight)
	assert.True(t, b.doc.Preflight.Passed, "the bundled server passes its own preflight")
	assert.Contains(t, b.md, "## Target preflight (not scored): passed")

	for _, id := range []string{"M0", "M1", "isolation"} {
		r := b.row(t, id)
		assert.Equal(t, rubric.Passed, r.Verdict, "%s: %s", id, r.Reason)
		b.requireEvidenceFiles(t, r)
	}
	// M0 is the submission's own record, matched against what the server saw
	// from its key.
	rec, err := os.ReadFile(filepath.Join(out, "evidence", "subject-contract", "out", "contract.json"))
	require.NoError(t, err)
	for _, want := range []string{`"create"`, "202", "204", "401", "404"} {
		assert.Contains(t, string(rec), want, "M0 record")
	}
	saw, err := os.ReadFile(filepath.Join(out, "evidence", "subject-contract", "server-saw.json"))
	require.NoError(t, err)
	assert.Contains(t, string(saw), `"status": 401`)
	assert.Contains(t, b.row(t, "M0").Reason, "the server saw each of the 5 recorded exchanges")
	// Score: only measured weight counts, and some was measured.
	assert.Greater(t, b.doc.Score.Measured, 0.0)
	assert.Less(t, b.doc.Score.Measured, 100.0)
	assert.Equal(t, 100.0, b.doc.Score.Total)
	assert.Contains(t, stdout.String(), fmt.Sprintf("measured %s of 100", rubric.Num(b.doc.Score.Measured)), "last line shows the measured weight")
	assert.Contains(t, lastLine(stdout.String()), "verdict: incomplete")

	// junit.xml: one testcase per criterion, milestone and drill.
	reg := rubric.Course
	wantCases := len(b.doc.Criteria) + len(b.doc.Milestones) + len(b.doc.Drills)
	assert.Equal(t, len(reg.OfKind(rubric.KindCriterion))+len(reg.OfKind(rubric.KindMilestone))+len(reg.OfKind(rubric.KindDrill)),
		wantCases, "one testcase per criterion, milestone and drill of the course")
	assert.Equal(t, wantCases, b.junitCaseCount())
	assert.Equal(t, wantCases, b.junit.Tests)
	_ = reg
	for _, id := range []string{"M0", "M1", "isolation"} {
		_, f, e, s := b.junitCase(t, id)
		assert.True(t, f == nil && e == nil && s == nil, "%s passed: no failure/error/skipped in junit", id)
	}
	_, f, e, s := b.junitCase(t, "D1")
	assert.Nil(t, f)
	assert.Nil(t, e)
	require.NotNil(t, s, "D1 was not run: skipped in junit")

	// cucumber.json: godog's record of exactly the two selected features.
	var uris []string
	for _, f := range b.cucumber {
		uris = append(uris, f.URI)
		for _, el := range f.Elements {
			for _, st := range el.Steps {
				assert.Equal(t, "passed", st.Result.Status, "%s / %s / %s", f.URI, el.Name, st.Name)
			}
		}
	}
	assert.ElementsMatch(t, []string{"m0_contract.feature", "m1_closed_loop.feature"}, uris)

	// results.jsonl: one line per outcome, in order, each a valid outcome.
	require.NotEmpty(t, b.results)
	assert.Equal(t, b.outcomeCount(), len(b.results), "results.jsonl has one line per outcome")
	for i, o := range b.results {
		assert.NoError(t, o.Validate(), "results.jsonl line %d", i+1)
		assert.Equal(t, int64(i+1), o.Seq, "results.jsonl line %d is in order", i+1)
	}

	requireNoLeaks(t, sandboxIDsIn(t, out))
}

// TestRunFullSuiteReference grades the reference subject on every feature.
// It also checks that a scenario whose step returns not measured shows up as
// not measured with its reason in every output: cost and maintainability
// (reviewer judgment) are checked in report.json, report.md, junit.xml and
// results.jsonl (TestRunAgainstURLTarget covers unsupported_by_target).
// And that a bundle reviewed from a file reaches a final score of 100 for
// the reference with full marks given: the bundle is then reviewed with
// `acceptance review --answers`.
func TestRunFullSuiteReference(t *testing.T) {
	requireSandboxes(t)
	gradingEnv(t)
	class := filepath.Join(t.TempDir(), "class")
	out := filepath.Join(class, "01-submission")
	state := shortStateDir(t)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := gradeMain(runArgs(t, class, "--state-dir", state, testdataSubmission(t, "submission")), &stdout, &stderr)
	t.Logf("full suite: %s\nstdout:\n%s\nstderr:\n%s", time.Since(start).Round(time.Second), stdout.String(), stderr.String())

	require.Equal(t, rubric.ExitPassed, code, "exit code")
	b := readBundle(t, out)
	assert.Equal(t, rubric.OverallPassed, b.doc.Verdict, b.doc.VerdictReason)
	assert.Empty(t, b.doc.Aborted)
	assert.Greater(t, b.doc.Score.Measured, 0.0)
	assert.Greater(t, b.doc.Score.Earned, 0.0)
	assert.LessOrEqual(t, b.doc.Score.Earned, b.doc.Score.Measured)
	assert.Equal(t, 100.0, b.doc.Score.Total)
	assert.Contains(t, lastLine(stdout.String()), "verdict: passed")

	for _, r := range b.rows() {
		switch r.Verdict {
		case rubric.Passed:
			b.requireEvidenceFiles(t, r)
		case rubric.NotMeasured:
			assert.NotEmpty(t, strings.TrimSpace(r.Reason), "%s is not measured without a reason", r.ID)
			assert.True(t, r.Category.Valid(), "%s is not measured with category %q", r.ID, r.Category)
		default:
			t.Errorf("%s: verdict %s (%s) in a run that passed", r.ID, r.Verdict, r.Reason)
		}
	}
	// The security criteria were measured, not skipped: a passed verdict on
	// the bundled server needs them.
	for _, id := range []string{"network", "credential", "injection", "isolation"} {
		assert.Equal(t, rubric.Passed, b.row(t, id).Verdict, id)
	}

	// D3's 429 is simulated by the bundled server, so the drill is measured here.
	assert.Equal(t, rubric.Passed, b.row(t, "D3").Verdict, b.row(t, "D3").Reason)
	cost := b.row(t, "cost")
	require.Equal(t, rubric.NotMeasured, cost.Verdict)
	assert.Equal(t, rubric.CategoryReviewerJudgment, cost.Category)
	// Maintainability: the submission's own tests and README are measured;
	// reproducing the run from them stays a reviewer's part.
	maint := b.row(t, "maintainability")
	require.Equal(t, rubric.Passed, maint.Verdict, maint.Reason)
	assert.Contains(t, maint.Reason, "test.unit: 1 passed")
	assert.Contains(t, maint.Reason, "partly not measured")
	// M0, M1 and D5 are measured on the submission's own calls.
	assert.Contains(t, b.row(t, "M0").Reason, "from the contract command")
	assert.Contains(t, b.row(t, "D5").Reason, "the reap command deleted 1 residual sandbox(es)")

	for _, r := range []struct {
		id     string
		reason string
		cat    rubric.Category
	}{{"cost", cost.Reason, cost.Category}} {
		require.NotEmpty(t, r.reason)
		// report.md: the row carries the verdict, the category and the reason.
		var mdRow string
		for _, line := range strings.Split(b.md, "\n") {
			if strings.HasPrefix(line, "| **"+r.id+"**") {
				mdRow = line
			}
		}
		require.NotEmpty(t, mdRow, "report.md has a row for %s", r.id)
		assert.Contains(t, mdRow, "not measured")
		assert.Contains(t, mdRow, string(r.cat))
		assert.Contains(t, mdRow, mdEscape(r.reason), "report.md shows %s's reason", r.id)
		// junit.xml: <skipped message="…reason…">, never a failure or an error.
		_, f, e, s := b.junitCase(t, r.id)
		assert.Nil(t, f, "%s is not a junit failure", r.id)
		assert.Nil(t, e, "%s is not a junit error", r.id)
		require.NotNil(t, s, "%s is a junit <skipped>", r.id)
		assert.Contains(t, s.Message, r.reason)
		assert.Contains(t, s.Message, string(r.cat))
		// results.jsonl: the step's own record (godog drops skip reasons).
		found := false
		for _, o := range b.results {
			if string(o.ID) == r.id && o.Verdict == rubric.NotMeasured && strings.Contains(r.reason, strings.TrimSpace(o.Reason)) {
				found = true
			}
		}
		assert.True(t, found, "results.jsonl records %s as not measured with its reason", r.id)
	}
	assert.Equal(t, 0, strings.Count(b.junitRaw, "<failure"), "no junit failures in a passed run")
	assert.Equal(t, 0, strings.Count(b.junitRaw, "<error"), "no junit errors in a passed run")
	nm := 0
	for _, r := range b.rows() {
		if r.Verdict == rubric.NotMeasured {
			nm++
		}
	}
	assert.Equal(t, nm, b.junit.Skipped, "every not-measured row and only those are junit skips")
	assert.Equal(t, b.outcomeCount(), len(b.results), "results.jsonl has one line per outcome")
	// Drift against the committed baselines is reported, not graded; log it so
	// a changed contract is visible in the test output too.
	for _, d := range b.doc.Drift {
		if d.Status != report.DriftMatch {
			t.Logf("evidence drift %s: %s %s", d.ID, d.Status, d.Detail)
		}
	}

	// Issue 11: the reference reviewed from a file with full marks reaches a
	// final score of 100; the provenance says which points the harness
	// measured (all but the reviewer's cost, maintainability and M5), and
	// report.json stays byte-identical.
	var qs strings.Builder
	for i := 1; i <= 15; i++ {
		fmt.Fprintf(&qs, "  %d: {verdict: passed}\n", i)
	}
	answers := filepath.Join(t.TempDir(), "review.yaml")
	require.NoError(t, os.WriteFile(answers, []byte("reviewer: Rita\nentries:\n  cost: {verdict: passed}\n  maintainability: {verdict: passed}\n  M5: {verdict: passed}\nquestions:\n"+qs.String()), 0o644))
	before := mustReadFile(t, filepath.Join(out, "report.json"))
	rc, rout, rerr := runCmd("review", "--answers", answers, out)
	require.Equal(t, 0, rc, rout+rerr)
	t.Logf("review:\n%s", rout)
	// cost 7.5 + maintainability 5 + M5 7.5 are the reviewer's (maintainability's
	// measured part, its tests and README, counts in the run's measured score;
	// the reviewer's judgement of it decides its final points).
	assert.Contains(t, rout, "final score: 100 of 100 (measured by the harness 80, judged by the reviewer 20)")
	assert.Equal(t, before, mustReadFile(t, filepath.Join(out, "report.json")), "the measured part is byte-identical")
	j, err := report.LoadJudgments(out)
	require.NoError(t, err)
	f := report.ComputeFinal(b.doc, j)
	assert.Equal(t, 100.0, f.Score)
	assert.True(t, f.Complete, f.Pending)
	assert.Equal(t, rubric.OverallPassed, f.Verdict, f.VerdictReason)
	assert.Equal(t, 80.0, f.MeasuredPoints)
	assert.Equal(t, 20.0, f.JudgedPoints)
	assert.Equal(t, 0.0, f.OverridePoints)
	for _, e := range f.Entries {
		switch e.ID {
		case rubric.Cost, rubric.Maintainability, rubric.M5:
			assert.Equal(t, report.ProvJudged, e.Provenance, e.ID)
		default:
			assert.Equal(t, report.ProvMeasured, e.Provenance, e.ID)
		}
		assert.Equal(t, e.Weight, e.Points, e.ID)
	}
	assert.Contains(t, string(mustReadFile(t, filepath.Join(out, "report.md"))), "## Final score after review: 100 of 100")

	requireNoLeaks(t, sandboxIDsIn(t, out), state)
}

// TestRunAgainstURLTarget grades a server given by URL. The bundled server is
// started without an admin token, so it is just another OpenSandbox server to
// the harness: no audit trail, no fault injection. What needs the audit must be
// not measured with its reason, never passed.
func TestRunAgainstURLTarget(t *testing.T) {
	requireSandboxes(t)
	gradingEnv(t)
	// A real server installs packages from the real index; here the package
	// hosts map to a loopback stub index the server's egress reaches.
	st, err := stubs.Start(stubs.Config{WheelsDir: filepath.Join(repoRoot(t), ".cache", "wheels"), DataAPIToken: "unused-" + randomHex(8)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	// The 50 MB input (@large) is left to the full-suite test: it adds half a
	// minute and nothing about the target's kind.
	g := gradeOnURLTarget(t, mockserver.BundledConfig{Upstreams: st.Upstreams()}, offlineRealTargetTags)
	target, key, state, out, code := g.target, g.key, g.state, g.out, g.code

	b := readBundle(t, out)
	assert.Equal(t, b.doc.ExitCode, code)
	assert.Equal(t, rubric.TargetReal, b.doc.TargetKind)
	assert.Equal(t, target, b.doc.Target)
	assert.NotContains(t, b.junitRaw+b.md, key, "the API key never appears in the report")

	for _, id := range []string{"M0", "M1"} {
		r := b.row(t, id)
		assert.Equal(t, rubric.Passed, r.Verdict, "%s: %s", id, r.Reason)
		b.requireEvidenceFiles(t, r)
	}

	// The audit-chain scenario cannot run without the audit: not measured,
	// unsupported by this target, and the reason says the audit is missing.
	var auditOutcomes []rubric.Outcome
	for _, o := range b.results {
		if strings.Contains(strings.ToLower(o.Scenario), "audit") {
			auditOutcomes = append(auditOutcomes, o)
		}
	}
	require.NotEmpty(t, auditOutcomes, "the audit-chain scenario left no outcome")
	for _, o := range auditOutcomes {
		assert.Equal(t, rubric.NotMeasured, o.Verdict, "%s/%s: %s", o.ID, o.Scenario, o.Reason)
		assert.Equal(t, rubric.CategoryUnsupportedByTarget, o.Category, "%s/%s", o.ID, o.Scenario)
		assert.Contains(t, strings.ToLower(o.Reason), "audit", "%s/%s: the reason names the missing audit", o.ID, o.Scenario)
	}
	// Honesty: no outcome whose evidence is the server's audit can pass here.
	for _, o := range b.results {
		if o.Verdict != rubric.Passed {
			continue
		}
		for _, ev := range o.Evidence {
			assert.NotContains(t, ev, "audit", "%s passed on audit evidence against a target without an audit: %s", o.ID, o.Scenario)
		}
	}
	// Nothing the bundled server alone can measure is claimed.
	for _, id := range []string{"D1", "D2", "D5"} {
		assert.NotEqual(t, rubric.Passed, b.row(t, id).Verdict, id)
	}
	// The run is not passed: the tags left measurable entries unmeasured.
	assert.NotEqual(t, rubric.OverallPassed, b.doc.Verdict, b.doc.VerdictReason)
	assert.NotEqual(t, rubric.ExitPassed, code)
	m2 := b.row(t, "M2")
	t.Logf("M2: %s (%s) %s", m2.Verdict, m2.Category, m2.Reason)
	if m2.Verdict == rubric.Passed {
		assert.Contains(t, m2.Reason, "not measured", "M2 passed only partly measured must say so")
	}

	requireNoLeaks(t, sandboxIDsIn(t, out), state)
}

// urlGrade is a grade of testdata/submission on a URL target.
type urlGrade struct {
	srv                     *mockserver.Bundled
	key, state, target, out string // out: the submission's bundle
	code                    int
}

// gradeOnURLTarget starts the bundled server as cfg says but without an admin
// token (with a fresh API key and state directory), so it is just another
// OpenSandbox server to the harness, and grades testdata/submission on it,
// given by URL, with tags.
func gradeOnURLTarget(t *testing.T, cfg mockserver.BundledConfig, tags string) urlGrade {
	t.Helper()
	g := urlGrade{key: "url-target-" + randomHex(8), state: shortStateDir(t)}
	cfg.APIKey, cfg.StateDir, cfg.AdminToken = g.key, g.state, ""
	srv, err := mockserver.StartBundled(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	g.srv, g.target = srv, "http://"+srv.Server.Domain()
	class := filepath.Join(t.TempDir(), "class")
	g.out = filepath.Join(class, "01-submission")
	var stdout, stderr bytes.Buffer
	g.code = gradeMain(runArgs(t, class, "--target", g.target, "--api-key", g.key, "--tags", tags,
		testdataSubmission(t, "submission")), &stdout, &stderr)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", g.code, stdout.String(), stderr.String())
	return g
}

// TestD3AgainstURLTargetIsInjectedByTheProxy grades D3 on a server given by
// URL: the bundled server started without an admin token, so it is just
// another OpenSandbox server to the harness (no capacity fault of its own).
// The run's recording proxy answers the subject's creates with the 429 of a
// 1.1.1 Kubernetes pool at capacity: the reference backs off as on the
// bundled server and passes, the server never sees one of its creates, and
// the verdict in report.json, report.md and junit says the 429 was injected
// by the harness's recording proxy.
func TestD3AgainstURLTargetIsInjectedByTheProxy(t *testing.T) {
	requireSandboxes(t)
	gradingEnv(t)
	g := gradeOnURLTarget(t, mockserver.BundledConfig{}, "@drill:D3 && @fault")
	srv, state, out := g.srv, g.state, g.out

	b := readBundle(t, out)
	assert.Equal(t, rubric.TargetReal, b.doc.TargetKind)
	const label = "429 injected by the harness's recording proxy (OpenSandbox's docker runtime has no pools)"
	r := b.row(t, "D3")
	assert.Equal(t, rubric.Passed, r.Verdict, r.Reason)
	assert.Contains(t, r.Reason, label)
	b.requireEvidenceFiles(t, r)
	assert.Contains(t, strings.ReplaceAll(b.md, `\`, ""), label, "report.md says where the 429 came from")
	assert.Contains(t, b.junitRaw, label, "junit.xml says where the 429 came from")
	var calls []command.Call
	for _, ev := range r.Evidence {
		if strings.HasSuffix(ev, command.ProxyLifecycleFile) {
			require.NoError(t, json.Unmarshal(mustReadFile(t, filepath.Join(out, ev)), &calls))
		}
	}
	require.NotEmpty(t, calls, "the proxy's records are evidence: %v", r.Evidence)
	for _, c := range calls {
		if c.Method == "POST" {
			assert.Equal(t, label, c.Injected, "the proxy's records mark each refused create as injected")
			assert.Equal(t, 429, c.Status)
		}
	}
	// The server's only creates are the target preflight's, made before the run.
	for _, ev := range srv.Server.Audit() {
		if lc := ev.Lifecycle; lc != nil && lc.Method == "POST" && strings.TrimSuffix(lc.Path, "/") == "/v1/sandboxes" && !ev.Time.Before(calls[0].Time) {
			t.Errorf("the server saw a create during the run (%d): the drill's creates are answered by the proxy, never forwarded", lc.Status)
		}
	}
	requireNoLeaks(t, sandboxIDsIn(t, out), state)
}

// TestRunInterruptedKeepsReport interrupts a run (SIGINT, as Ctrl-C would)
// while the reference subject is at work in its sandbox: the report is still
// written, says the run was interrupted, is not passed, blames nothing on the
// subject, and no sandbox survives. The run is a child process (this test
// binary; TestMain dispatches "run").
func TestRunInterruptedKeepsReport(t *testing.T) {
	requireSandboxes(t)
	out := filepath.Join(t.TempDir(), "bundle")
	state := shortStateDir(t)
	cmd := exec.Command(os.Args[0], append([]string{"run"},
		runArgs(t, out, "--state-dir", state, "--seed", "11", "--tags", "@milestone:M2 && ~@large")...)...)
	cmd.Env = append(os.Environ(), "UPDATE_BASELINES=", "UPDATE_SNAPS=", "ACCEPTANCE_DEBUG=")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	var stdout syncBuffer
	firstScenario := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for n := 0; sc.Scan(); n++ {
			line := sc.Text()
			_, _ = stdout.Write([]byte(line + "\n"))
			if n > 1 { // line 0 is the target preflight, line 1 the run's header
				select {
				case firstScenario <- line:
				default:
				}
			}
		}
		done <- cmd.Wait()
	}()
	t.Cleanup(func() { // never leave the child behind, whatever happens
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})

	select {
	case line := <-firstScenario:
		t.Logf("first scenario line: %s", line)
	case err := <-done:
		t.Fatalf("the run ended (%v) before its first scenario reported:\n%s\n%s", err, stdout.String(), stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("no scenario reported within 60s:\n%s\n%s", stdout.String(), stderr.String())
	}
	// Let the subject get into its sandbox (create, upload, pip) first.
	time.Sleep(2 * time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	var waitErr error
	select {
	case waitErr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the run did not stop within 30s of SIGINT:\n%s\n%s", stdout.String(), stderr.String())
	}
	t.Logf("exit: %v\nstdout:\n%s\nstderr:\n%s", waitErr, stdout.String(), stderr.String())
	code := cmd.ProcessState.ExitCode()

	b := readBundle(t, out)
	assert.NotEqual(t, rubric.OverallPassed, b.doc.Verdict)
	assert.Contains(t, b.doc.Aborted, "interrupted")
	assert.Contains(t, b.md, "interrupted", "report.md says the run was interrupted")
	assert.Equal(t, b.doc.ExitCode, code, "exit code is the report's")
	assert.NotEqual(t, rubric.ExitPassed, code)
	// What was measured before the signal is kept; the interrupt itself is
	// never blamed on the subject.
	for _, r := range b.rows() {
		assert.NotEqual(t, rubric.Failed, r.Verdict, "%s failed in an interrupted run of the reference: %s", r.ID, r.Reason)
	}
	for _, o := range b.results {
		t.Logf("recorded: %s %s %s: %s", o.ID, o.Verdict, o.Category, o.Reason)
	}
	requireNoLeaks(t, sandboxIDsIn(t, out), state)
}
