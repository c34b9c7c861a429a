package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

func openBundle(t *testing.T, opts report.Options) *report.Bundle {
	t.Helper()
	if opts.Now == nil {
		opts.Now = reporttest.FixedClock()
	}
	b, err := report.Open(t.TempDir(), rubric.Course, reporttest.FixtureMeta(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestEvidenceWritersRedactAndNeverOverwrite(t *testing.T) {
	b := openBundle(t, report.Options{})
	b.AddSecrets("sk-data-api-0123456789", "")
	ev := b.Evidence(rubric.Credential)

	ref1, err := ev.WriteText("env scan.txt", "TOKEN=sk-data-api-0123456789\n")
	require.NoError(t, err)
	ref2, err := ev.WriteText("env scan.txt", "second")
	require.NoError(t, err)
	assert.Equal(t, "evidence/credential/env_scan.txt", ref1)
	assert.Equal(t, "evidence/credential/env_scan-2.txt", ref2)
	got, _ := os.ReadFile(filepath.Join(b.Dir(), ref1))
	assert.Equal(t, "TOKEN=[REDACTED sha256:"+report.Fingerprint("sk-data-api-0123456789")+"]\n", string(got))

	// Path traversal in names is neutralised.
	ref, err := ev.WriteText("../../etc/passwd", "x")
	require.NoError(t, err)
	assert.Equal(t, "evidence/credential/etc_passwd", ref)

	code := 7
	ref, err = b.Evidence(rubric.D1).WriteCommand("install.txt", report.Command{Label: "install step", SandboxID: "sb1",
		Command: "pip install pandas", ExitCode: &code, DurationMs: 1200, Stdout: "", Stderr: "Could not resolve host: pypi.org\n"})
	require.NoError(t, err)
	got, _ = os.ReadFile(filepath.Join(b.Dir(), ref))
	assert.Equal(t, "# install step\nsandbox: sb1\n$ pip install pandas\nexit_code: 7\nduration_ms: 1200\n--- stdout\n\n--- stderr\nCould not resolve host: pypi.org\n", string(got))

	ref, err = b.Evidence(rubric.M0).WriteExchanges("create.txt", osb.Exchange{
		RequestLine: "POST /v1/sandboxes HTTP/1.1", Status: 202, StatusLine: "HTTP/1.1 202 Accepted", DurationMs: 3,
		RequestHeaders: map[string]string{"OPEN-SANDBOX-API-KEY": "[REDACTED]"}, ResponseBody: `{"id":"abc"}`})
	require.NoError(t, err)
	got, _ = os.ReadFile(filepath.Join(b.Dir(), ref))
	assert.Contains(t, string(got), "> POST /v1/sandboxes HTTP/1.1\n")
	assert.Contains(t, string(got), "< HTTP/1.1 202 Accepted (3 ms)\n")

	src := filepath.Join(t.TempDir(), "input.csv")
	require.NoError(t, os.WriteFile(src, []byte("a,b\n1,2\n"), 0o644))
	h, err := report.HashFile(src)
	require.NoError(t, err)
	assert.Equal(t, report.HashBytes("input.csv", []byte("a,b\n1,2\n")), h)
	assert.Equal(t, int64(2), h.Lines)
	ref, err = b.Evidence(rubric.Accuracy).WriteHashes("hashes.txt", h)
	require.NoError(t, err)
	got, _ = os.ReadFile(filepath.Join(b.Dir(), ref))
	assert.Contains(t, string(got), h.SHA256+"  8  2  input.csv\n")

	ref, err = b.Evidence(rubric.Function).CopyFile("chart.png", src)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(b.Dir(), ref))
}

func TestNormalize(t *testing.T) {
	in := strings.Join([]string{
		"< X-Request-Id: 4f1c2a9e-77aa-4d0c-9a51-0f0e6c1d2b3a",
		`{"id":"0b6f1a52-3c1e-4c55-9d0e-2f6a1b7c8d9e","createdAt":"2026-11-29T07:31:02.123456Z","request_id":"req-17"}`,
		`endpoint 127.0.0.1:41234/proxy/8080 and localhost:9999`,
		`sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 netns osb-0123456789ab`,
		`{"duration_ms": 1234, "timestamp": 1764401462123, "exit_code": 0}`,
		"< HTTP/1.1 202 Accepted (17 ms)",
		"Date: Sun, 29 Nov 2026 07:31:02 GMT",
		"Content-Length: 311",
		"duration_ms: 88",
		"GET /v1/sandboxes?metadata=capstone-run%3D20261129T074846Z-f55a18",
	}, "\r\n")
	want := strings.Join([]string{
		"< X-Request-Id: <request-id>",
		`{"id":"<uuid>","createdAt":"<time>","request_id":"<request-id>"}`,
		`endpoint 127.0.0.1:<port>/proxy/8080 and localhost:<port>`,
		`sha256 <hex> netns osb-<hex>`,
		`{"duration_ms": <n>, "timestamp": <n>, "exit_code": 0}`,
		"< HTTP/1.1 202 Accepted (<n> ms)",
		"Date: <http-date>",
		"Content-Length: <n>",
		"duration_ms: <n>",
		"GET /v1/sandboxes?metadata=capstone-run%3D<run-id>",
	}, "\n")
	assert.Equal(t, want, report.Normalize(in))
	assert.Equal(t, report.Normalize(report.Normalize(in)), report.Normalize(in), "idempotent")
}

func TestDriftLifecycle(t *testing.T) {
	t.Setenv("UPDATE_SNAPS", "")
	base := t.TempDir()
	write := func(b *report.Bundle, body string) {
		ref, err := b.Evidence(rubric.M0).WriteText("transcript.txt", body)
		require.NoError(t, err)
		require.NoError(t, b.Results().Pass(rubric.M0, "m0", "ok", ref))
	}
	find := func(d report.Document) report.DriftResult {
		for _, r := range d.Drift {
			if r.ID == rubric.M0 {
				return r
			}
		}
		t.Fatalf("no drift result for M0: %+v", d.Drift)
		return report.DriftResult{}
	}
	body := "> POST /v1/sandboxes HTTP/1.1\n< HTTP/1.1 202 Accepted (12 ms)\n< X-Request-Id: 8d3a\n{\"id\":\"0b6f1a52-3c1e-4c55-9d0e-2f6a1b7c8d9e\"}\n"

	// No baseline: reported, nothing written.
	b := openBundle(t, report.Options{Baselines: report.Baselines{Dir: base}})
	write(b, body)
	d, err := b.Finalize()
	require.NoError(t, err)
	assert.Equal(t, report.DriftNoBaseline, find(d).Status)
	assert.NoFileExists(t, filepath.Join(base, "mock", "M0_1.snap"))

	// Explicit update writes the baseline.
	b = openBundle(t, report.Options{Baselines: report.Baselines{Dir: base, Update: true}})
	write(b, body)
	d, err = b.Finalize()
	require.NoError(t, err)
	r := find(d)
	if r.Status == report.DriftSkipped {
		t.Skipf("go-snaps refused to write (CI detected?): %s", r.Detail)
	}
	assert.Equal(t, report.DriftUpdated, r.Status, r.Detail)
	snap, err := os.ReadFile(filepath.Join(base, "mock", "M0_1.snap"))
	require.NoError(t, err)
	assert.Contains(t, string(snap), "<uuid>")
	assert.Contains(t, string(snap), "(<n> ms)")

	// Same contract, different ids and timings: match.
	b = openBundle(t, report.Options{Baselines: report.Baselines{Dir: base}})
	write(b, strings.NewReplacer("12 ms", "40 ms", "8d3a", "ffff", "0b6f1a52", "11111111").Replace(body))
	d, err = b.Finalize()
	require.NoError(t, err)
	assert.Equal(t, report.DriftMatch, find(d).Status, find(d).Diff)

	// Changed contract: drift, reported, baseline untouched, verdict unaffected.
	b = openBundle(t, report.Options{Baselines: report.Baselines{Dir: base}})
	write(b, strings.Replace(body, "202 Accepted", "200 OK", 1))
	d, err = b.Finalize()
	require.NoError(t, err)
	r = find(d)
	assert.Equal(t, report.DriftChanged, r.Status)
	assert.Contains(t, r.Diff, "200 OK")
	assert.NotContains(t, r.Diff, "\x1b[", "no ANSI colours in the report")
	assert.Contains(t, r.Diff, "\nat "+filepath.ToSlash(filepath.Join(base, "mock", "M0_1.snap"))+":1",
		"the diff names the baseline as configured, not relative to the working directory")
	assert.NotContains(t, r.Diff, "at ../")
	assert.Equal(t, rubric.Passed, reporttest.EntryRow(d, rubric.M0).Verdict, "drift is not a failed criterion")
	after, _ := os.ReadFile(filepath.Join(base, "mock", "M0_1.snap"))
	assert.Equal(t, string(snap), string(after), "a grading run never rewrites baselines")
	md, _, _ := reporttest.ReadAll(t, b.Dir())
	assert.Contains(t, md, "| M0 | drift |")

	// UPDATE_SNAPS=always would make go-snaps write: refused in grading runs.
	t.Setenv("UPDATE_SNAPS", "always")
	res := report.Baselines{Dir: base}.Check(rubric.TargetMock, rubric.M0, "anything")
	assert.Equal(t, report.DriftSkipped, res.Status)
	after, _ = os.ReadFile(filepath.Join(base, "mock", "M0_1.snap"))
	assert.Equal(t, string(snap), string(after))
}

func TestBundleConcurrentRecordsAndEvidence(t *testing.T) {
	b := openBundle(t, report.Options{})
	done := make(chan struct{})
	for i := 0; i < 20; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			ref, err := b.Evidence(rubric.M1).WriteText("run.txt", "ok")
			assert.NoError(t, err)
			assert.NoError(t, b.Results().Pass(rubric.M1, "m1", "ok", ref))
		}()
	}
	for i := 0; i < 20; i++ {
		<-done
	}
	outs, skipped, err := report.ReadJournal(filepath.Join(b.Dir(), report.JournalFile))
	require.NoError(t, err)
	assert.Zero(t, skipped)
	assert.Len(t, outs, 20)
	refs := map[string]bool{}
	for _, o := range outs {
		refs[o.Evidence[0]] = true
	}
	assert.Len(t, refs, 20, "every writer got its own file")
	d, err := b.Finalize()
	require.NoError(t, err)
	assert.Len(t, reporttest.EntryRow(d, rubric.M1).Evidence, 20)
}

// A bundle belongs to one run: reusing a directory that already holds a run
// would mix two runs' outcomes into one verdict.
func TestOpenRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte("{}\n"), 0o644))
	_, err := report.Open(dir, rubric.Course, report.Meta{RunID: "x"}, report.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already holds files")

	empty := t.TempDir()
	b, err := report.Open(empty, rubric.Course, report.Meta{RunID: "y"}, report.Options{})
	require.NoError(t, err)
	require.NoError(t, b.Close())
}

func TestSnapshotExclude(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "evidence", "subject-x"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "evidence", "M0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evidence", "M0", "a.txt"), []byte("contract"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evidence", "subject-x", "audit.json"), []byte("subject"), 0o644))
	refs := []string{"evidence/M0/a.txt", "evidence/subject-x/audit.json"}
	all, ok := report.SnapshotText(dir, refs, nil)
	require.True(t, ok)
	assert.Contains(t, all, "subject")
	some, ok := report.SnapshotText(dir, refs, func(r string) bool { return strings.HasPrefix(r, "evidence/subject-") })
	require.True(t, ok)
	assert.Contains(t, some, "contract")
	assert.NotContains(t, some, "subject")
	_, ok = report.SnapshotText(dir, refs[1:], func(string) bool { return true })
	assert.False(t, ok, "nothing left to snapshot")
}
