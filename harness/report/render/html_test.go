package render

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// The bundles of the core's testdata (harness/report/testdata/bundles; see
// the core's html_test.go for what each holds).
const (
	fixtureBundle  = "../testdata/bundles/m0m5-a"
	commandsBundle = "../testdata/bundles/m0d5-cmds"
	testsBundle    = "../testdata/bundles/m4-tests"
)

// htmlFixtureDoc is the golden fixture document with the subject run of
// fixtureBundle, the preflight and the contract and reap commands of
// commandsBundle, and the test commands of testsBundle.
func htmlFixtureDoc(t *testing.T) report.Document {
	d := reporttest.FixtureDoc(t)
	runs, err := report.ReadRuns(fixtureBundle)
	require.NoError(t, err)
	d.Runs = runs
	meta, err := reporttest.ReadMeta(commandsBundle)
	require.NoError(t, err)
	require.NotNil(t, meta.Preflight)
	d.Preflight = meta.Preflight
	invs, err := report.ReadInvocations(commandsBundle)
	require.NoError(t, err)
	tests, err := report.ReadInvocations(testsBundle)
	require.NoError(t, err)
	d.Invocations = append(invs, tests...)
	return d
}

func TestGoldenHTML(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, report.Scored(htmlFixtureDoc(t))))
	reporttest.Golden(t, "report.html", b.Bytes())
}

func TestGoldenHTMLReviewed(t *testing.T) {
	t.Parallel()
	d := htmlFixtureDoc(t)
	d.Final = report.ComputeFinal(d, &report.Judgments{Reviewer: "R. Viewer",
		Entries: map[rubric.ID]report.Judgment{
			rubric.Cost:    {Verdict: rubric.Passed, Points: 7.5, Note: "clear table with measured figures"},
			rubric.Network: {Verdict: rubric.Passed, Points: 4.17, OverrideReason: "probe host was on the course's allow list by mistake"},
		},
		Questions: map[int]report.Judgment{1: {Verdict: rubric.Passed, Points: 0.25}, 2: {Verdict: rubric.Failed, Points: 0, Note: "no reason for the TTL"}}})
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, report.Scored(d)))
	reporttest.Golden(t, "report-reviewed.html", b.Bytes())
	assert.Contains(t, b.String(), "Reviewer override (R. Viewer): probe host was on the course")
}

// TestHTMLSelfContained: no script, no external asset, no network URL, and
// small (thumbnails only).
func TestHTMLSelfContained(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, report.Scored(htmlFixtureDoc(t))))
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
	dir := reporttest.CopyBundle(t, fixtureBundle)
	_, err := report.RenderDir(dir, rubric.Course, report.Options{})
	require.NoError(t, err)
	page := filepath.Join(dir, report.HTMLFile)
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
	assert.Contains(t, dom, `id="score">`+renderedScore(t, dir)+` / 100<`, "the score the course gives the re-rendered bundle")
	assert.Contains(t, dom, `<table id="scoring">`)
	assert.Contains(t, dom, `id="entry-network"`)
	assert.Regexp(t, `<svg class="timeline"[^>]*aria-label="timeline of subject run sales"`, dom)
	assert.Contains(t, dom, "sandbox 53811602")
	assert.Contains(t, dom, "step analyze")

	shotDir := filepath.Join("..", "..", "..", "reports", "html-test")
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
	_ = os.WriteFile(filepath.Join(shotDir, "report.html"), reporttest.MustRead(t, page), 0o644)
	t.Logf("screenshot: %s", shot)

	// The preflight section and the commands' timelines.
	dir = reporttest.CopyBundle(t, commandsBundle)
	_, err = report.RenderDir(dir, rubric.Course, report.Options{})
	require.NoError(t, err)
	page = filepath.Join(dir, report.HTMLFile)
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
	_ = os.WriteFile(filepath.Join(shotDir, "report-commands.html"), reporttest.MustRead(t, page), 0o644)
	t.Logf("screenshot: %s", shot)

	// The submission's test commands (a real M4 run).
	dir = reporttest.CopyBundle(t, testsBundle)
	_, err = report.RenderDir(dir, rubric.Course, report.Options{})
	require.NoError(t, err)
	page = filepath.Join(dir, report.HTMLFile)
	abs, _ = filepath.Abs(page)
	out.Reset()
	errb.Reset()
	cmd = chromiumCmd(ctx, bin, t.TempDir(), "--dump-dom", "file://"+abs)
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "chromium --dump-dom: %s", errb.String())
	dom = out.String()
	assert.Contains(t, dom, `id="score">`+renderedScore(t, dir)+` / 100<`)
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
	_ = os.WriteFile(filepath.Join(shotDir, "report-tests.html"), reporttest.MustRead(t, page), 0o644)
	t.Logf("screenshot: %s", shot)
}

func reviewedFixtureDoc(t *testing.T) report.Document {
	d := reporttest.FixtureDoc(t)
	d.Final = report.ComputeFinal(d, &report.Judgments{Reviewer: "R. Viewer",
		Entries: map[rubric.ID]report.Judgment{
			rubric.Cost:    {Verdict: rubric.Passed, Points: 6, Note: "estimate table; lifespan not compared"},
			rubric.Network: {Verdict: rubric.Passed, Points: 4.17, OverrideReason: "probe host was on the course's allow list by mistake"},
		}})
	return d
}

func TestGoldenMarkdownReviewed(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, reviewedFixtureDoc(t)))
	reporttest.Golden(t, "report-reviewed.md", b.Bytes())
}

func TestGoldenGradescopeReviewed(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteGradescope(&b, report.Scored(reviewedFixtureDoc(t))))
	reporttest.Golden(t, "results-reviewed.json", b.Bytes())
}

// A failed preflight is shown in its own section with the failing check,
// never as a score.
func TestHTMLFailedPreflight(t *testing.T) {
	t.Parallel()
	d := reporttest.FixtureDoc(t)
	d.Preflight = &report.Preflight{Passed: false, Reason: "create answered 200, not 202", Checks: []report.PreflightCheck{
		{Name: "create", Passed: false, Detail: "POST /v1/sandboxes → 200 OK"},
	}}
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, report.Scored(d)))
	s := b.String()
	assert.Contains(t, s, `<section id="preflight" class="failed">`)
	assert.Contains(t, s, "<h2>Target preflight (not scored): FAILED: create answered 200, not 202</h2>")
	assert.Contains(t, s, "a server that fails it grades nothing")
	assert.Contains(t, s, `<tr><td>create</td><td class="v fail">failed</td>`)
	// Without a preflight (e.g. an old bundle) there is no section.
	d.Preflight = nil
	b.Reset()
	require.NoError(t, WriteHTML(&b, report.Scored(d)))
	assert.NotContains(t, b.String(), `id="preflight"`)
}

// A run with hundreds of sandboxes and commands (a test suite's) draws at
// most maxBars of each and says how many more there are.
func TestTimelineBoundsBars(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	r := report.SubjectRun{Key: "test.integration", Field: "test.integration", Command: "pytest", Start: t0, End: t0.Add(time.Minute)}
	for i := 0; i < maxBars+25; i++ {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		r.Sandboxes = append(r.Sandboxes, report.SandboxLife{ID: fmt.Sprintf("sb-%03d", i), Created: at, Deleted: at.Add(time.Second)})
		code := 0
		r.Steps = append(r.Steps, report.TimelineStep{Name: fmt.Sprintf("cmd %d", i), Start: at, DurationMs: 50, ExitCode: &code})
	}
	tl := layoutTimeline(r)
	assert.Equal(t, 25, tl.HiddenSandboxes)
	assert.Equal(t, 25, tl.HiddenSteps)
	assert.Len(t, tl.Bars, 1+2*maxBars, "the command, maxBars sandboxes, maxBars steps")
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, report.Scored(report.Document{Invocations: []report.SubjectRun{r}})))
	assert.Contains(t, b.String(), "Not drawn: 25 more sandbox(es) and 25 more command(s)")
}

// The browser helpers live in reporttest (the class page's test in
// cmd/acceptance drives chromium too).
var (
	findChromium = func(t *testing.T) string { return reporttest.FindChromium(t) }
	chromiumCmd  = reporttest.ChromiumCmd
)

// renderedScore is the measured score a re-rendered, unreviewed bundle
// earned under the course, as its page prints it (a literal would break with
// any change of the weights).
func renderedScore(t *testing.T, dir string) string {
	t.Helper()
	d, err := report.ReadDocument(dir)
	require.NoError(t, err)
	require.Nil(t, d.Final, "an unreviewed bundle")
	return rubric.Num(d.Score.Earned)
}
