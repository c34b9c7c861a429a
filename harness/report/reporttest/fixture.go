package reporttest

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// The fixture document every report test shares (the core's, the renderers'
// golden files and the class summary's "alice"), and the golden-file helper.

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// T0 is the fixture run's start.
var T0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

// FixedClock ticks one second from T0 on each call.
func FixedClock() func() time.Time {
	n := 0
	return func() time.Time {
		n++
		return T0.Add(time.Duration(n) * time.Second)
	}
}

// FixtureMeta is the fixture run's metadata.
func FixtureMeta() report.Meta {
	return report.Meta{
		RunID: "run-20261129-080000", Target: "mock", TargetKind: rubric.TargetMock,
		Subject: "python3 agent.py --csv {csv} --out {out}", Seed: 42,
		Versions:  map[string]string{"harness": "dev", "server": "mock 1.1.1"},
		StartedAt: T0, EndedAt: T0.Add(3 * time.Minute),
	}
}

// FixtureOutcomes covers every verdict and category.
func FixtureOutcomes(t testing.TB) []rubric.Outcome {
	r := rubric.NewResults(rubric.Course)
	r.SetClock(FixedClock())
	must := func(err error) { require.NoError(t, err) }
	must(r.Pass(rubric.Function, "m2: report and chart", "report.md, chart.png (640x480 PNG) and summary.json produced, exit 0",
		"evidence/function/outputs.txt"))
	must(r.Pass(rubric.Accuracy, "m2: recompute", "rows 1000 = 1000; mean_price 12.5 = 12.5 (tol 1e-9)", "evidence/accuracy/recompute.json"))
	must(r.Pass(rubric.Isolation, "m1: destroy", "GET after delete: 404"))
	must(r.Fail(rubric.Network, "m3: probe", "exfil.invalid resolved and was reached (exit 0); policy had defaultAction allow",
		"evidence/network/create-request.txt", "evidence/network/probe.txt"))
	must(r.Pass(rubric.Credential, "m3: canary", "no canary found in env, files or output"))
	must(r.NotMeasured(rubric.Injection, "d4: injection", rubric.CategoryPreconditionUnmet,
		"subject exited 2 before reading the CSV | no report.md to inspect"))
	must(r.Timeout(rubric.Budget, "m4: budget", "summary.json not written within 120s"))
	must(r.HarnessError(rubric.Observability, "m2: audit", "audit query failed: connection refused"))
	must(r.Pass(rubric.M0, "m0", "202/200/401/204/404 as expected", "evidence/M0/transcript.txt"))
	must(r.Pass(rubric.M1, "m1 run 1", "2 read back; file identical; 404"))
	must(r.Pass(rubric.M1, "m1 run 2", "2 read back; file identical; 404"))
	// D2 passed in one of two repetitions (--repeat 2): flaky.
	must(r.Pass(rubric.D2, "d2: vanish", "the run reported sandbox_gone and exited 3"))
	must(r.Fail(rubric.D2, "d2: vanish", "the run hung 120s after its sandbox vanished"))
	must(r.Flaky(rubric.D2, "d2: vanish", 1, 2))
	must(r.NotMeasured(rubric.D3, "d3", rubric.CategoryUnsupportedByTarget, "server answered 202 to 3 concurrent creates; it has no capacity limit"))
	return r.Outcomes()
}

// FixtureDoc is the golden fixture document: every verdict, a drift result of
// each kind.
func FixtureDoc(t testing.TB) report.Document {
	d, _ := report.Build(rubric.Course, FixtureMeta(), FixtureOutcomes(t), []report.DriftResult{
		{ID: rubric.M0, Status: report.DriftChanged, Baseline: "harness/report/baselines/mock/M0_1.snap",
			Detail: "normalised evidence differs from the baseline", Diff: "- < HTTP/1.1 202 Accepted\n+ < HTTP/1.1 200 OK"},
		{ID: rubric.Function, Status: report.DriftMatch, Baseline: "harness/report/baselines/mock/function_1.snap"},
	})
	return d
}

// Golden compares got with testdata/NAME.golden of the test's package
// (rewritten with -update).
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "missing golden file; run go test -run Golden -update in the test's package")
	assert.Equal(t, string(want), string(got), "%s differs from golden (go test -update)", p)
}

// MustRead reads a file or fails the test.
func MustRead(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// ReadMeta reads a bundle's run.json.
func ReadMeta(dir string) (report.Meta, error) {
	var m report.Meta
	b, err := os.ReadFile(filepath.Join(dir, report.MetaFile))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(b, &m)
}

// EntryRow is the document's row of entry id (zero when absent).
func EntryRow(d report.Document, id rubric.ID) report.EntryRow {
	for _, r := range d.AllEntries() {
		if r.ID == id {
			return r
		}
	}
	return report.EntryRow{}
}

// ReadAll reads a rendered bundle's report.md, report.json and junit.xml.
func ReadAll(t testing.TB, dir string) (md, js, junit string) {
	t.Helper()
	return string(MustRead(t, filepath.Join(dir, report.MarkdownFile))),
		string(MustRead(t, filepath.Join(dir, report.JSONFile))),
		string(MustRead(t, filepath.Join(dir, report.JUnitFile)))
}

// StandInDoc is the fixture graded on a real target whose execd, egress and
// sandbox images are stand-ins (the docker target without a registry).
func StandInDoc(t testing.TB) report.Document {
	m := FixtureMeta()
	m.Target, m.TargetKind = "http://127.0.0.1:8090", rubric.TargetReal
	m.Versions = map[string]string{
		"harness":                  "dev",
		"component: control plane": "opensandbox-server==1.1.1 (official)",
		"component: execd image osb-acceptance/execd-standin:9e0c":   "sha256:ecae (stand-in)",
		"component: egress image osb-acceptance/egress-standin:5657": "sha256:7ec1 (stand-in)",
		"component: sandbox image python:3.12":                       "sha256:d29d (stand-in)",
	}
	d, _ := report.Build(rubric.Course, m, FixtureOutcomes(t), nil)
	return d
}
