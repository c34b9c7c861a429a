package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

const fixtureBundle = "testdata/bundles/m0m5-a"

// commandsBundle is a real bundle of the testdata submission graded on M0
// and D5 (`acceptance grade --tags '@milestone:M0,@drill:D5'`, transcripts,
// home directories and the input copy left out): a passed preflight in
// run.json, the contract and reap commands' invocation.json and
// server-saw.json, and a subject run killed mid-run.
const commandsBundle = "testdata/bundles/m0d5-cmds"

// testsBundle is a real bundle of the testdata submission graded on M4
// (`acceptance grade --tags @milestone:M4`; home directories, transcripts,
// the input copy and the subject's chart and report left out): the
// submission's test.unit and test.integration commands with their
// invocation.json and server-saw.json (the integration test creates and
// deletes a sandbox with its key), and the sales subject run.
const testsBundle = "testdata/bundles/m4-tests"

// copyBundle copies a fixture bundle into a fresh directory.
var copyBundle = reporttest.CopyBundle

// htmlFixtureDoc is the golden fixture document with the subject run of
// fixtureBundle, the preflight and the contract and reap commands of
// commandsBundle, and the test commands of testsBundle.
func htmlFixtureDoc(t *testing.T) Document {
	d := fixtureDoc(t)
	runs, err := ReadRuns(fixtureBundle)
	require.NoError(t, err)
	d.Runs = runs
	meta, err := readMeta(commandsBundle)
	require.NoError(t, err)
	require.NotNil(t, meta.Preflight)
	d.Preflight = meta.Preflight
	invs, err := ReadInvocations(commandsBundle)
	require.NoError(t, err)
	tests, err := ReadInvocations(testsBundle)
	require.NoError(t, err)
	d.Invocations = append(invs, tests...)
	return d
}

// The test commands' timelines, from a real M4 run: the unit test made no
// call; the integration test created a sandbox with the command's key and
// deleted it, and the server saw both calls.
func TestReadInvocationsTestCommands(t *testing.T) {
	t.Parallel()
	invs, err := ReadInvocations(testsBundle)
	require.NoError(t, err)
	require.Len(t, invs, 2)
	unit, integ := invs[0], invs[1]
	assert.Equal(t, "test.unit", unit.Field)
	assert.Equal(t, "python3 -m unittest discover -s tests/unit -v", unit.Command)
	assert.Equal(t, "evidence/subject-test.unit", unit.Dir)
	assert.Equal(t, 0, unit.ExitCode)
	assert.True(t, unit.HasAudit)
	assert.Equal(t, 0, unit.Calls)
	assert.Empty(t, unit.Sandboxes)

	assert.Equal(t, "test.integration", integ.Field)
	assert.Equal(t, "python3 -m unittest discover -s tests/integration -v", integ.Command)
	assert.True(t, integ.Start.After(unit.End) || integ.Start.Equal(unit.End), "the integration test runs after the unit test")
	assert.Equal(t, 0, integ.ExitCode)
	assert.True(t, integ.HasAudit)
	assert.Equal(t, 2, integ.Calls)
	require.Len(t, integ.Sandboxes, 1)
	sb := integ.Sandboxes[0]
	assert.True(t, strings.HasPrefix(sb.ID, "8c5af3c3"))
	assert.False(t, sb.Created.Before(integ.Start), "created while the command ran")
	assert.True(t, sb.Deleted.After(sb.Created))
	assert.False(t, sb.Deleted.After(integ.End), "deleted before the command ended")
	var labels []string
	for _, m := range integ.Markers {
		labels = append(labels, m.Kind+": "+m.Label)
	}
	assert.Equal(t, []string{"call: POST /v1/sandboxes → 202", "call: DELETE /v1/sandboxes/8c5af3c3 → 204"}, labels)

	runs, err := ReadRuns(testsBundle)
	require.NoError(t, err)
	require.Len(t, runs, 1, "the test commands are not subject runs")
	assert.Equal(t, "sales", runs[0].Key)
}

// The contract and reap commands' timelines: what the server saw from each
// command's own key (and keyless calls while the contract check ran), the
// sandboxes they created or deleted, in start order.
func TestReadInvocations(t *testing.T) {
	t.Parallel()
	invs, err := ReadInvocations(commandsBundle)
	require.NoError(t, err)
	require.Len(t, invs, 2)
	reap, contract := invs[0], invs[1]
	assert.Equal(t, "reap", reap.Field, "the reap ran first in this run")
	assert.Equal(t, "python3 reap.py", reap.Command)
	assert.Equal(t, "20261130T181026Z-25b0fe-sales-sigkill-mid-run", reap.RunID, "reap gets the killed run's id")
	assert.Equal(t, "contract", contract.Field)
	assert.Equal(t, "contract", contract.Key)
	assert.Equal(t, "evidence/subject-contract", contract.Dir)
	assert.Equal(t, "python3 contract.py --out {out}", contract.Command)
	assert.False(t, contract.Start.IsZero())
	assert.True(t, contract.End.After(contract.Start))
	assert.Equal(t, 0, contract.ExitCode)
	assert.True(t, contract.HasAudit)

	require.Len(t, contract.Sandboxes, 1)
	sb := contract.Sandboxes[0]
	assert.True(t, strings.HasPrefix(sb.ID, "373b36f4"))
	assert.False(t, sb.Created.IsZero())
	assert.True(t, sb.Deleted.After(sb.Created))
	assert.False(t, sb.Gone404.Before(sb.Deleted))
	assert.Equal(t, 5, contract.Calls)
	var labels []string
	for _, m := range contract.Markers {
		labels = append(labels, m.Kind+": "+m.Label)
	}
	assert.Equal(t, []string{
		"call: POST /v1/sandboxes → 202",
		"call: GET /v1/sandboxes/373b36f4/endpoints/44772 → 200",
		"call: without a key: POST /v1/sandboxes → 401",
		"call: DELETE /v1/sandboxes/373b36f4 → 204",
		"call: GET /v1/sandboxes/373b36f4 → 404",
	}, labels)

	// The reap deleted the killed run's sandbox: created before it ran.
	require.Len(t, reap.Sandboxes, 1)
	assert.True(t, reap.Sandboxes[0].Created.IsZero())
	assert.False(t, reap.Sandboxes[0].Deleted.IsZero())
	assert.Equal(t, 2, reap.Calls)

	// Subject runs are not commands, and commands are not subject runs.
	runs, err := ReadRuns(commandsBundle)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, "sales-sigkill-mid-run", runs[0].Key)
	assert.Empty(t, runs[0].Field)
}

// A command that made many calls shows the first ones and says how many
// more server-saw.json holds; a command with no server-saw.json still shows
// its process.
func TestReadInvocationsManyCalls(t *testing.T) {
	t.Parallel()
	dir := copyBundle(t, commandsBundle)
	saw := filepath.Join(dir, "evidence", "subject-contract", "server-saw.json")
	var m map[string][]map[string]any
	require.NoError(t, json.Unmarshal(mustRead(t, saw), &m))
	base := m["calls_with_its_key"][0]
	for i := 0; i < 30; i++ {
		c := map[string]any{}
		for k, v := range base {
			c[k] = v
		}
		c["seq"] = 1000 + i
		m["calls_with_its_key"] = append(m["calls_with_its_key"], c)
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(saw, b, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "evidence", "subject-reap", "server-saw.json")))
	invs, err := ReadInvocations(dir)
	require.NoError(t, err)
	require.Len(t, invs, 2)
	contract := invs[1]
	assert.Equal(t, 35, contract.Calls)
	assert.Len(t, contract.Markers, maxCallMarkers+1)
	assert.Equal(t, "… and 19 more calls (server-saw.json)", contract.Markers[len(contract.Markers)-1].Label)
	reap := invs[0]
	assert.False(t, reap.HasAudit)
	assert.Empty(t, reap.Sandboxes)
	var buf bytes.Buffer
	require.NoError(t, WriteHTML(&buf, Document{Invocations: invs}))
	assert.Contains(t, buf.String(), `id="cmd-reap"`)
	assert.NotContains(t, buf.String(), "evidence/subject-reap/server-saw.json", "no link to a file that is not there")
}

func TestReadRunsTimeline(t *testing.T) {
	t.Parallel()
	runs, err := ReadRuns(fixtureBundle)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	r := runs[0]
	assert.Equal(t, "sales", r.Key)
	require.Len(t, r.Sandboxes, 1)
	sb := r.Sandboxes[0]
	assert.False(t, sb.Created.IsZero())
	assert.True(t, sb.Deleted.After(sb.Created))
	assert.False(t, sb.Gone404.Before(sb.Deleted), "the 404 comes after the delete")
	require.Len(t, r.Steps, 2)
	assert.Equal(t, "install", r.Steps[0].Name, "step names come from summary.json")
	assert.Equal(t, "analyze", r.Steps[1].Name)
	require.NotNil(t, r.Steps[1].ExitCode)
	assert.Equal(t, 0, *r.Steps[1].ExitCode)
	assert.True(t, strings.HasPrefix(r.Thumbnail, "data:image/png;base64,"))
	assert.Less(t, len(r.Thumbnail), 70<<10, "a thumbnail, not the chart")
}

func TestTimelineFaultMarkers(t *testing.T) {
	t.Parallel()
	dir := copyBundle(t, fixtureBundle)
	audit := filepath.Join(dir, "evidence", "subject-sales", "audit.json")
	b, err := os.ReadFile(audit)
	require.NoError(t, err)
	// Plant a fault-driven denial and an expiry, as drills D1 and D2 produce.
	extra := `,{"seq":100,"time":"2026-11-30T15:08:48.000Z","sandbox_id":"x","kind":"egress","egress":{"phase":"dns","host":"pypi.org","decision":"deny","rule":"override:pypi.org"}},` +
		`{"seq":101,"time":"2026-11-30T15:08:49.000Z","sandbox_id":"53811602-9961-43a5-bc02-d3a0dcdd99ef","kind":"state","state":{"from":"Running","to":"Expired","reason":"expired by the admin API"}}]`
	b = append(bytes.TrimRight(bytes.TrimSpace(b), "]"), []byte(extra)...)
	require.NoError(t, os.WriteFile(audit, b, 0o644))
	// Two refused creates (drill D3's 429s) are in lifecycle-calls.json only.
	calls := `[{"seq":1,"time":"2026-11-30T15:08:46.7Z","kind":"lifecycle","lifecycle":{"method":"POST","path":"/v1/sandboxes","status":429}},` +
		`{"seq":2,"time":"2026-11-30T15:08:48.8Z","kind":"lifecycle","lifecycle":{"method":"POST","path":"/v1/sandboxes","status":429}}]`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evidence", "subject-sales", "lifecycle-calls.json"), []byte(calls), 0o644))
	runs, err := ReadRuns(dir)
	require.NoError(t, err)
	var labels []string
	for _, m := range runs[0].Markers {
		labels = append(labels, m.Kind+": "+m.Label)
	}
	assert.Contains(t, labels, "fault: egress denied by a simulated fault: pypi.org")
	assert.Contains(t, labels, "fault: sandbox Expired: expired by the admin API")
	assert.Contains(t, labels, "fault: create attempt answered 429 (1)")
	assert.Contains(t, labels, "fault: create attempt answered 429 (2)")
	assert.Equal(t, "audit", runs[0].StepsFrom)

	// Without an audit the steps are the subject's own account.
	require.NoError(t, os.Remove(audit))
	runs, err = ReadRuns(dir)
	require.NoError(t, err)
	assert.Equal(t, "summary", runs[0].StepsFrom)
	assert.False(t, runs[0].HasAudit)
	require.Len(t, runs[0].Steps, 2)
	assert.True(t, runs[0].Steps[0].Start.IsZero(), "no start time is invented")
}

func TestGoldenHTML(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, htmlFixtureDoc(t)))
	golden(t, "report.html", b.Bytes())
}

func TestGoldenHTMLReviewed(t *testing.T) {
	t.Parallel()
	d := htmlFixtureDoc(t)
	d.Final = ComputeFinal(d, &Judgments{Reviewer: "R. Viewer",
		Entries: map[rubric.ID]Judgment{
			rubric.Cost:    {Verdict: rubric.Passed, Points: 7.5, Note: "clear table with measured figures"},
			rubric.Network: {Verdict: rubric.Passed, Points: 4.17, OverrideReason: "probe host was on the course's allow list by mistake"},
		},
		Questions: map[int]Judgment{1: {Verdict: rubric.Passed, Points: 0.25}, 2: {Verdict: rubric.Failed, Points: 0, Note: "no reason for the TTL"}}})
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, d))
	golden(t, "report-reviewed.html", b.Bytes())
	assert.Contains(t, b.String(), "Reviewer override (R. Viewer): probe host was on the course")
}

// TestHTMLSelfContained: no script, no external asset, no network URL, and
// small (thumbnails only).
func TestHTMLSelfContained(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, htmlFixtureDoc(t)))
	s := b.String()
	assert.NotContains(t, strings.ToLower(s), "<script")
	assert.NotContains(t, strings.ToLower(s), "<link")
	assert.NotContains(t, s, "@import")
	urls := regexp.MustCompile(`(?i)(?:src|href)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(s, -1)
	require.NotEmpty(t, urls)
	for _, u := range urls {
		assert.False(t, strings.Contains(u[1], "://"), "external reference %q", u[1])
	}
	assert.Less(t, len(s), 256<<10, "report.html stays small")
}

// The browser helpers live in reporttest (the class page's test in
// cmd/acceptance drives chromium too).
var (
	findChromium = func(t *testing.T) string { return reporttest.FindChromium(t) }
	chromiumCmd  = reporttest.ChromiumCmd
)

// TestHTMLInChromium renders three real bundles' report.html in headless
// Chromium, asserts the key elements in the DOM it built, and keeps
// screenshots at reports/html-test/report.png, report-commands.png and
// report-tests.png: the first has a subject run with its chart; the second
// the target preflight, a killed subject run and the submission's contract
// and reap commands; the third the submission's unit and integration test
// commands.
func TestHTMLInChromium(t *testing.T) {
	t.Parallel()
	bin := findChromium(t)
	dir := copyBundle(t, fixtureBundle)
	_, err := RenderDir(dir, rubric.Course, Options{})
	require.NoError(t, err)
	page := filepath.Join(dir, HTMLFile)
	abs, _ := filepath.Abs(page)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	var out, errb bytes.Buffer
	cmd := chromiumCmd(ctx, bin, t.TempDir(), "--dump-dom", "file://"+abs)
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "chromium --dump-dom: %s", errb.String())
	dom := out.String()
	assert.Contains(t, dom, `id="verdict"`)
	assert.Contains(t, dom, "INCOMPLETE")
	assert.Regexp(t, `id="score">14 / 100<`, dom)
	assert.Contains(t, dom, `<table id="scoring">`)
	assert.Contains(t, dom, `id="entry-network"`)
	assert.Regexp(t, `<svg class="timeline"[^>]*aria-label="timeline of subject run sales"`, dom)
	assert.Contains(t, dom, "sandbox 53811602")
	assert.Contains(t, dom, "step analyze")

	shotDir := filepath.Join("..", "..", "reports", "html-test")
	require.NoError(t, os.MkdirAll(shotDir, 0o755))
	shot, _ := filepath.Abs(filepath.Join(shotDir, "report.png"))
	_ = os.Remove(shot)
	cmd = chromiumCmd(ctx, bin, t.TempDir(), "--hide-scrollbars", "--window-size=1280,1600", "--screenshot="+shot, "file://"+abs)
	errb.Reset()
	cmd.Stderr = &errb
	require.NoError(t, cmd.Run(), "chromium --screenshot: %s", errb.String())
	fi, err := os.Stat(shot)
	require.NoError(t, err, "screenshot written")
	assert.Greater(t, fi.Size(), int64(10_000), "a real picture")
	_ = os.WriteFile(filepath.Join(shotDir, "report.html"), mustRead(t, page), 0o644)
	t.Logf("screenshot: %s", shot)

	// The preflight section and the commands' timelines.
	dir = copyBundle(t, commandsBundle)
	_, err = RenderDir(dir, rubric.Course, Options{})
	require.NoError(t, err)
	page = filepath.Join(dir, HTMLFile)
	abs, _ = filepath.Abs(page)
	out.Reset()
	errb.Reset()
	cmd = chromiumCmd(ctx, bin, t.TempDir(), "--dump-dom", "file://"+abs)
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "chromium --dump-dom: %s", errb.String())
	dom = out.String()
	assert.Regexp(t, `<section id="preflight" class="passed">\s*<h2>Target preflight \(not scored\): passed</h2>`, dom)
	assert.Regexp(t, `<table id="preflight-checks">`, dom)
	for _, check := range []string{"create", "endpoint", "execd ping", "unauthorized", "delete", "get after delete"} {
		assert.Regexp(t, `<tr><td>`+regexp.QuoteMeta(check)+`</td><td class="v pass">passed</td>`, dom)
	}
	assert.Regexp(t, `<svg class="timeline"[^>]*aria-label="timeline of subject run sales-sigkill-mid-run"`, dom)
	assert.Contains(t, dom, "kill: subject process ended by a signal (killed)")
	assert.Contains(t, dom, `<h2 id="commands">`)
	assert.Regexp(t, `<div class="run cmd" id="cmd-contract">\s*<h3>contract: <code>python3 contract.py --out \{out\}</code>`, dom)
	assert.Regexp(t, `<svg class="timeline"[^>]*aria-label="timeline of the contract command \(contract\)"`, dom)
	assert.Regexp(t, `<svg class="timeline"[^>]*aria-label="timeline of the reap command \(reap\)"`, dom)
	assert.Contains(t, dom, ">contract command</text>")
	assert.Contains(t, dom, ">reap command</text>")
	assert.Contains(t, dom, ">sandbox 373b36f4</text>")
	assert.Contains(t, dom, "call: without a key: POST /v1/sandboxes → 401")
	assert.Contains(t, dom, "call: DELETE /v1/sandboxes/9a8cfa66 → 204")
	assert.Contains(t, dom, `<a href="evidence/subject-contract/server-saw.json">server-saw.json</a>`)
	assert.Less(t, strings.Index(dom, `id="preflight"`), strings.Index(dom, `<table id="scoring">`), "the preflight is near the top, apart from the score")

	shot, _ = filepath.Abs(filepath.Join(shotDir, "report-commands.png"))
	_ = os.Remove(shot)
	cmd = chromiumCmd(ctx, bin, t.TempDir(), "--hide-scrollbars", "--window-size=1280,3200", "--screenshot="+shot, "file://"+abs)
	errb.Reset()
	cmd.Stdout, cmd.Stderr = nil, &errb
	require.NoError(t, cmd.Run(), "chromium --screenshot: %s", errb.String())
	fi, err = os.Stat(shot)
	require.NoError(t, err, "screenshot written")
	assert.Greater(t, fi.Size(), int64(10_000), "a real picture")
	_ = os.WriteFile(filepath.Join(shotDir, "report-commands.html"), mustRead(t, page), 0o644)
	t.Logf("screenshot: %s", shot)

	// The submission's test commands (a real M4 run).
	dir = copyBundle(t, testsBundle)
	_, err = RenderDir(dir, rubric.Course, Options{})
	require.NoError(t, err)
	page = filepath.Join(dir, HTMLFile)
	abs, _ = filepath.Abs(page)
	out.Reset()
	errb.Reset()
	cmd = chromiumCmd(ctx, bin, t.TempDir(), "--dump-dom", "file://"+abs)
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "chromium --dump-dom: %s", errb.String())
	dom = out.String()
	assert.Regexp(t, `id="score">19 / 100<`, dom)
	assert.Contains(t, dom, `id="entry-maintainability"`)
	assert.Contains(t, dom, `<h2 id="commands">`)
	assert.Regexp(t, `<div class="run cmd" id="cmd-test.unit">\s*<h3>test.unit: <code>python3 -m unittest discover -s tests/unit -v</code>`, dom)
	assert.Regexp(t, `<div class="run cmd" id="cmd-test.integration">\s*<h3>test.integration: <code>python3 -m unittest discover -s tests/integration -v</code>`, dom)
	assert.Regexp(t, `<svg class="timeline"[^>]*aria-label="timeline of the test.unit command \(test.unit\)"`, dom)
	assert.Regexp(t, `<svg class="timeline"[^>]*aria-label="timeline of the test.integration command \(test.integration\)"`, dom)
	assert.Contains(t, dom, ">test.integration command</text>")
	assert.Contains(t, dom, ">sandbox 8c5af3c3</text>")
	assert.Contains(t, dom, "call: POST /v1/sandboxes → 202")
	assert.Contains(t, dom, "call: DELETE /v1/sandboxes/8c5af3c3 → 204")
	assert.Contains(t, dom, `<a href="evidence/subject-test.integration/server-saw.json">server-saw.json</a>`)
	assert.Regexp(t, `<svg class="timeline"[^>]*aria-label="timeline of subject run sales"`, dom)

	shot, _ = filepath.Abs(filepath.Join(shotDir, "report-tests.png"))
	_ = os.Remove(shot)
	cmd = chromiumCmd(ctx, bin, t.TempDir(), "--hide-scrollbars", "--window-size=1280,3200", "--screenshot="+shot, "file://"+abs)
	errb.Reset()
	cmd.Stdout, cmd.Stderr = nil, &errb
	require.NoError(t, cmd.Run(), "chromium --screenshot: %s", errb.String())
	fi, err = os.Stat(shot)
	require.NoError(t, err, "screenshot written")
	assert.Greater(t, fi.Size(), int64(10_000), "a real picture")
	_ = os.WriteFile(filepath.Join(shotDir, "report-tests.html"), mustRead(t, page), 0o644)
	t.Logf("screenshot: %s", shot)
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

func reviewedFixtureDoc(t *testing.T) Document {
	d := fixtureDoc(t)
	d.Final = ComputeFinal(d, &Judgments{Reviewer: "R. Viewer",
		Entries: map[rubric.ID]Judgment{
			rubric.Cost:    {Verdict: rubric.Passed, Points: 6, Note: "estimate table; lifespan not compared"},
			rubric.Network: {Verdict: rubric.Passed, Points: 4.17, OverrideReason: "probe host was on the course's allow list by mistake"},
		}})
	return d
}

func TestGoldenMarkdownReviewed(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, reviewedFixtureDoc(t)))
	golden(t, "report-reviewed.md", b.Bytes())
}

func TestGoldenGradescopeReviewed(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteGradescope(&b, reviewedFixtureDoc(t)))
	golden(t, "results-reviewed.json", b.Bytes())
}

// A failed preflight is shown in its own section with the failing check,
// never as a score.
func TestHTMLFailedPreflight(t *testing.T) {
	t.Parallel()
	d := fixtureDoc(t)
	d.Preflight = &Preflight{Passed: false, Reason: "create answered 200, not 202", Checks: []PreflightCheck{
		{Name: "create", Passed: false, Detail: "POST /v1/sandboxes → 200 OK"},
	}}
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, d))
	s := b.String()
	assert.Contains(t, s, `<section id="preflight" class="failed">`)
	assert.Contains(t, s, "<h2>Target preflight (not scored): FAILED: create answered 200, not 202</h2>")
	assert.Contains(t, s, "a server that fails it grades nothing")
	assert.Contains(t, s, `<tr><td>create</td><td class="v fail">failed</td>`)
	// Without a preflight (e.g. an old bundle) there is no section.
	d.Preflight = nil
	b.Reset()
	require.NoError(t, WriteHTML(&b, d))
	assert.NotContains(t, b.String(), `id="preflight"`)
}

// A run with hundreds of sandboxes and commands (a test suite's) draws at
// most maxBars of each and says how many more there are.
func TestTimelineBoundsBars(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	r := SubjectRun{Key: "test.integration", Field: "test.integration", Command: "pytest", Start: t0, End: t0.Add(time.Minute)}
	for i := 0; i < maxBars+25; i++ {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		r.Sandboxes = append(r.Sandboxes, SandboxLife{ID: fmt.Sprintf("sb-%03d", i), Created: at, Deleted: at.Add(time.Second)})
		code := 0
		r.Steps = append(r.Steps, TimelineStep{Name: fmt.Sprintf("cmd %d", i), Start: at, DurationMs: 50, ExitCode: &code})
	}
	tl := layoutTimeline(r)
	assert.Equal(t, 25, tl.HiddenSandboxes)
	assert.Equal(t, 25, tl.HiddenSteps)
	assert.Len(t, tl.Bars, 1+2*maxBars, "the command, maxBars sandboxes, maxBars steps")
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, Document{Invocations: []SubjectRun{r}}))
	assert.Contains(t, b.String(), "Not drawn: 25 more sandbox(es) and 25 more command(s)")
}
