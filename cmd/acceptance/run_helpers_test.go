package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
	osbruntime "github.com/osb-capstone/acceptance/mock-server/runtime"
)

// Helpers shared by the run command's integration tests (run_test.go).

// repoRoot is the module root, two levels above this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return root
}

// requireSandboxes skips an integration test that starts real sandboxes when
// this machine cannot run them, naming exactly what is missing.
func requireSandboxes(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: starts real sandboxes (bwrap + netns); skipped under -short")
	}
	if goruntime.GOOS != "linux" {
		t.Skipf("integration test needs Linux namespaces; this is %s", goruntime.GOOS)
	}
	if os.Geteuid() != 0 {
		t.Skipf("integration test needs root to create network namespaces and cgroups; euid is %d", os.Geteuid())
	}
	for _, bin := range []string{"bwrap", "ip", "nsenter"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("integration test needs %s on PATH (make deps installs it): %v", bin, err)
		}
	}
	// Sandboxes see the host's /usr, so it is Debian's python3 that matters
	// (not whatever python3 comes first on PATH).
	if out, err := exec.Command("/usr/bin/python3", "-c", "import pandas, matplotlib").CombinedOutput(); err != nil {
		t.Skipf("integration test needs /usr/bin/python3 with python3-pandas and python3-matplotlib (make deps installs them): %v: %s",
			err, strings.TrimSpace(string(out)))
	}
}

// runArgs completes a `run` command line with what a test run needs from the
// repository: the wheels of the stub package index and the evidence
// baselines (read, never rewritten: the tests clear UPDATE_BASELINES).
func runArgs(t testing.TB, out string, extra ...string) []string {
	t.Helper()
	root := repoRoot(t)
	args := []string{
		"--out", out,
		"--wheels", filepath.Join(root, ".cache", "wheels"),
		"--baselines", filepath.Join(root, filepath.FromSlash(report.DefaultBaselineDir)),
	}
	return append(args, extra...)
}

// gradingEnv makes sure a test run can never rewrite evidence baselines.
func gradingEnv(t *testing.T) {
	t.Helper()
	t.Setenv("UPDATE_BASELINES", "")
	t.Setenv("UPDATE_SNAPS", "")
	t.Setenv("ACCEPTANCE_DEBUG", "")
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// bundle is a parsed report bundle.
type bundle struct {
	dir      string
	doc      report.Document
	md       string
	junit    junitDoc
	junitRaw string
	cucumber []cucumberFeature
	results  []rubric.Outcome
}

type junitDoc struct {
	XMLName xml.Name `xml:"testsuites"`
	Tests   int      `xml:"tests,attr"`
	Skipped int      `xml:"skipped,attr"`
	Suites  []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name      string     `xml:"name,attr"`
			Classname string     `xml:"classname,attr"`
			Failure   *junitText `xml:"failure"`
			Error     *junitText `xml:"error"`
			Skipped   *junitText `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitText struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

type cucumberFeature struct {
	URI      string `json:"uri"`
	Name     string `json:"name"`
	Elements []struct {
		Name  string `json:"name"`
		Steps []struct {
			Name   string `json:"name"`
			Result struct {
				Status string `json:"status"`
			} `json:"result"`
		} `json:"steps"`
	} `json:"elements"`
}

// readBundle parses every output of a bundle, failing the test if one is
// missing or does not parse.
func readBundle(t testing.TB, dir string) *bundle {
	t.Helper()
	b := &bundle{dir: dir}
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err, "report.json")
	require.NoError(t, json.Unmarshal(raw, &b.doc), "report.json parses")

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err, "report.md")
	b.md = string(md)

	jx, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	require.NoError(t, err, "junit.xml")
	b.junitRaw = string(jx)
	require.NoError(t, xml.Unmarshal(jx, &b.junit), "junit.xml parses")

	cj, err := os.ReadFile(filepath.Join(dir, "cucumber.json"))
	require.NoError(t, err, "cucumber.json")
	require.NoError(t, json.Unmarshal(cj, &b.cucumber), "cucumber.json parses: %.300s", cj)

	f, err := os.Open(filepath.Join(dir, "results.jsonl"))
	require.NoError(t, err, "results.jsonl")
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		var o rubric.Outcome
		require.NoError(t, json.Unmarshal(sc.Bytes(), &o), "results.jsonl line %d: %s", n, sc.Text())
		b.results = append(b.results, o)
	}
	require.NoError(t, sc.Err())
	return b
}

// rows is every criterion, milestone and drill row of the report.
func (b *bundle) rows() []report.EntryRow {
	var all []report.EntryRow
	all = append(all, b.doc.Criteria...)
	all = append(all, b.doc.Milestones...)
	return append(all, b.doc.Drills...)
}

// row is the report row of id; the test fails if there is none.
func (b *bundle) row(t testing.TB, id string) report.EntryRow {
	t.Helper()
	for _, r := range b.rows() {
		if string(r.ID) == id {
			return r
		}
	}
	t.Fatalf("report.json has no row %q", id)
	return report.EntryRow{}
}

// junitCase finds the testcase of id ("<id>: <title>").
func (b *bundle) junitCase(t testing.TB, id string) (name string, failure, errored, skipped *junitText) {
	t.Helper()
	for _, s := range b.junit.Suites {
		for _, c := range s.Cases {
			if strings.HasPrefix(c.Name, id+": ") {
				return c.Name, c.Failure, c.Error, c.Skipped
			}
		}
	}
	t.Fatalf("junit.xml has no testcase for %q", id)
	return "", nil, nil, nil
}

// junitCaseCount is the number of testcases in junit.xml.
func (b *bundle) junitCaseCount() int {
	n := 0
	for _, s := range b.junit.Suites {
		n += len(s.Cases)
	}
	return n
}

// outcomeCount is the number of outcomes report.json attributes to rows.
func (b *bundle) outcomeCount() int {
	n := 0
	for _, r := range b.rows() {
		n += len(r.Outcomes)
	}
	return n
}

// requireEvidenceFiles checks that every evidence reference of a row names a
// file inside the bundle that exists and is not empty.
func (b *bundle) requireEvidenceFiles(t testing.TB, r report.EntryRow) {
	t.Helper()
	require.NotEmpty(t, r.Evidence, "%s: a passed entry must carry evidence", r.ID)
	for _, ref := range r.Evidence {
		require.False(t, filepath.IsAbs(ref) || strings.HasPrefix(filepath.Clean(ref), ".."), "%s: evidence %q is not inside the bundle", r.ID, ref)
		fi, err := os.Stat(filepath.Join(b.dir, filepath.FromSlash(ref)))
		require.NoError(t, err, "%s: evidence %q", r.ID, ref)
		require.True(t, fi.Mode().IsRegular() && fi.Size() > 0, "%s: evidence %q is empty or not a file", r.ID, ref)
	}
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// sandboxIDsIn collects every UUID-looking id mentioned anywhere in a bundle
// (transcripts, audit evidence, subject summaries): the sandboxes this run
// created are among them. Extra ids only make the leak check stricter.
func sandboxIDsIn(t testing.TB, dir string) []string {
	t.Helper()
	seen := map[string]bool{}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err != nil || fi.Size() > 32<<20 {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, id := range uuidRE.FindAllString(string(data), -1) {
			seen[id] = true
		}
		return nil
	})
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	return ids
}

// requireNoLeaks checks that nothing of the given sandboxes survives the run:
// no named netns osb-<id12>, no live process whose command line names the
// sandbox (bwrap and the agent carry its state paths), no state directory
// under stateDirs. Scoped to this run's ids, so it holds while other runs
// share the machine.
func requireNoLeaks(t testing.TB, ids []string, stateDirs ...string) {
	t.Helper()
	var leaks []string
	for _, id := range ids {
		name := "osb-" + id[:12]
		if _, err := os.Stat(filepath.Join("/run/netns", name)); err == nil {
			leaks = append(leaks, "netns "+name)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || len(cmd) == 0 { // gone, or a zombie (nothing left but its pid)
			continue
		}
		line := strings.ReplaceAll(string(cmd), "\x00", " ")
		for _, id := range ids {
			if strings.Contains(line, id) {
				leaks = append(leaks, "process "+filepath.Base(p)+": "+clipString(line, 160))
				break
			}
		}
		for _, d := range stateDirs {
			if d != "" && strings.Contains(line, d) {
				leaks = append(leaks, "process "+filepath.Base(p)+": "+clipString(line, 160))
				break
			}
		}
	}
	for _, d := range stateDirs {
		if d == "" {
			continue
		}
		left, _ := filepath.Glob(filepath.Join(d, "sandboxes", "*"))
		for _, l := range left {
			leaks = append(leaks, "directory "+l)
		}
	}
	require.Empty(t, leaks, "the run left these behind (%d sandbox ids checked)", len(ids))
}

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// shortStateDir is a bundled-server state directory with a short path (unix
// socket paths inside it are limited to 108 bytes), removed after the test.
func shortStateDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "osbt-")
	require.NoError(t, err)
	t.Cleanup(func() {
		// A server the test could not stop (a child it killed when it
		// failed) leaves its sandboxes: their processes, cgroups and osb-*
		// namespaces are known only by this state dir's records, so they are
		// reaped before it goes, and a dead grader's confinement boxes too.
		// The leak check stays clean after a red run.
		if removed, err := osbruntime.ReapStateDir(d); len(removed) > 0 || err != nil {
			t.Logf("reaped what a stopped server left in %s: %v (%v)", d, removed, err)
		}
		if n, err := confine.Reap(""); n > 0 || err != nil {
			t.Logf("reaped %d boxes of a dead grader (%v)", n, err)
		}
		_ = os.RemoveAll(d)
	})
	return d
}

// keptDir is a directory for a test's bundles: t.TempDir(), or, when
// OSB_E2E_KEEP names a directory, a fresh directory under it that outlives
// the test (so a failed end-to-end run's bundles can be read afterwards).
func keptDir(t *testing.T, name string) string {
	t.Helper()
	root := os.Getenv("OSB_E2E_KEEP")
	if root == "" {
		return t.TempDir()
	}
	require.NoError(t, os.MkdirAll(root, 0o755))
	d, err := os.MkdirTemp(root, name+"-")
	require.NoError(t, err)
	t.Logf("bundles kept in %s (OSB_E2E_KEEP)", d)
	return d
}
