package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Helpers for subjects_test.go: grading the student-style submission in
// fixtures/submissions/student/ (official Python SDK) end to end with runMain.

// subjectEnv is what a student-subject run needs on this machine.
type subjectEnv struct {
	root   string // repository root (absolute)
	python string // the venv python with opensandbox==1.1.1
	script string // fixtures/submissions/student/student_subject.py
	wheels string // the stub package index's wheels
}

// requireSubjectEnv skips (with the observed reason) unless real sandboxes
// can run here: not -short, root, bwrap, ip, Debian python3 with pandas and
// matplotlib (what the sandboxes run), the SDK venv and the tabulate wheel.
func requireSubjectEnv(t testing.TB) subjectEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("student subject runs start real sandboxes: skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skipf("student subject runs need root for netns + bwrap (euid is %d)", os.Geteuid())
	}
	for _, bin := range []string{"bwrap", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("student subject runs need %s: %v (make deps installs it)", bin, err)
		}
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", "import pandas, matplotlib").CombinedOutput(); err != nil {
		t.Skipf("sandboxes run /usr/bin/python3, which cannot import pandas and matplotlib (%v: %s); make deps installs python3-pandas python3-matplotlib",
			err, strings.TrimSpace(string(out)))
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found at %s: %v", root, err)
	}
	e := subjectEnv{
		root:   root,
		python: filepath.Join(root, ".cache", "py-sdk", "bin", "python"),
		script: filepath.Join(root, "fixtures", "submissions", "student", "student_subject.py"),
		wheels: filepath.Join(root, ".cache", "wheels"),
	}
	if out, err := exec.Command(e.python, "-c", "import opensandbox").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import opensandbox (%v: %s); run `make deps` (or bash .ci/deps.sh)", e.python, err, strings.TrimSpace(string(out)))
	}
	if m, _ := filepath.Glob(filepath.Join(e.wheels, "tabulate-*.whl")); len(m) == 0 {
		t.Skipf("no tabulate wheel in %s for the stub package index; run `make deps`", e.wheels)
	}
	return e
}

// template is the --subject command line, absolute paths only.
func (e subjectEnv) template(flaw string) string {
	s := shellQuote(e.python) + " " + shellQuote(e.script) + " --csv {csv} --question {question} --out {out}"
	if flaw != "" {
		s += " --flaw " + flaw
	}
	return s
}

// shellQuote quotes a path for the subject's shell command line.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// gradedRun is one `acceptance run` of the student subject.
type gradedRun struct {
	out, stateDir string
	exit          int
	took          time.Duration
	stdout        string
	stderr        string
	report        reportJSON
}

// reportJSON is the part of report.json these tests read.
type reportJSON struct {
	Verdict       string      `json:"verdict"`
	VerdictReason string      `json:"verdict_reason"`
	ExitCode      int         `json:"exit_code"`
	Criteria      []entryJSON `json:"criteria"`
	Milestones    []entryJSON `json:"milestones"`
	Drills        []entryJSON `json:"drills"`
}

type entryJSON struct {
	ID       string        `json:"id"`
	Verdict  string        `json:"verdict"`
	Reason   string        `json:"reason"`
	Outcomes []outcomeJSON `json:"outcomes"`
}

type outcomeJSON struct {
	Scenario string `json:"scenario"`
	Verdict  string `json:"verdict"`
	Reason   string `json:"reason"`
}

// gradeStudent runs `acceptance run` (runMain, bundled server in-process) on
// the student subject with one flaw ("" = the good submission) and the given
// tag expression, then checks that no sandbox of the run is left.
func gradeStudent(t *testing.T, e subjectEnv, flaw, tags string) *gradedRun {
	t.Helper()
	g := &gradedRun{out: t.TempDir(), stateDir: t.TempDir()}
	args := []string{
		"--subject", e.template(flaw),
		"--tags", tags,
		"--out", g.out,
		"--state-dir", g.stateDir,
		"--wheels", e.wheels,
		"--baselines", t.TempDir(), // drift baselines are not under test; never write into the repo
		"--subject-timeout", "5m",
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	g.exit = runMain(args, &stdout, &stderr)
	g.took = time.Since(start)
	g.stdout, g.stderr = stdout.String(), stderr.String()
	t.Logf("acceptance run --flaw %q --tags %q: exit %d in %s\n%s%s", flaw, tags, g.exit, g.took.Round(time.Millisecond), g.stdout, g.stderr)

	b, err := os.ReadFile(filepath.Join(g.out, "report.json"))
	require.NoError(t, err, "report.json must be written")
	require.NoError(t, json.Unmarshal(b, &g.report), "report.json must parse")
	require.Equal(t, g.report.ExitCode, g.exit, "report.json's exit_code is the command's exit code")

	assertNoSandboxLeft(t, g.stateDir)
	return g
}

// entry finds a criterion, milestone or drill by id.
func (g *gradedRun) entry(t *testing.T, id string) entryJSON {
	t.Helper()
	for _, list := range [][]entryJSON{g.report.Criteria, g.report.Milestones, g.report.Drills} {
		for _, en := range list {
			if en.ID == id {
				return en
			}
		}
	}
	t.Fatalf("report.json has no entry %q", id)
	return entryJSON{}
}

// failedReasons are the reasons of the entry's failed outcomes (and its own).
func (en entryJSON) failedReasons() []string {
	out := []string{}
	if en.Verdict == "failed" {
		out = append(out, en.Reason)
	}
	for _, o := range en.Outcomes {
		if o.Verdict == "failed" {
			out = append(out, o.Scenario+": "+o.Reason)
		}
	}
	return out
}

// requireFailedWith asserts the entry failed and one failed reason contains every fragment.
func (g *gradedRun) requireFailedWith(t *testing.T, id string, fragments ...string) string {
	t.Helper()
	en := g.entry(t, id)
	require.Equal(t, "failed", en.Verdict, "%s: reason %q", id, en.Reason)
	reasons := en.failedReasons()
	for _, r := range reasons {
		ok := true
		for _, f := range fragments {
			if !strings.Contains(r, f) {
				ok = false
				break
			}
		}
		if ok {
			return r
		}
	}
	t.Fatalf("%s failed, but no failed reason contains all of %q:\n%s", id, fragments, strings.Join(reasons, "\n"))
	return ""
}

// requireNotPassed asserts the graded-failure verdict and its exit code.
func (g *gradedRun) requireNotPassed(t *testing.T) {
	t.Helper()
	require.Equal(t, "not_passed", g.report.Verdict, "verdict reason: %s", g.report.VerdictReason)
	require.Equal(t, 1, g.exit, "not_passed exits 1")
}

// requireSecurityGate asserts not_passed is due to a failed security criterion.
func (g *gradedRun) requireSecurityGate(t *testing.T, criterion string) {
	t.Helper()
	g.requireNotPassed(t)
	require.Regexp(t, `security criterion failed: [a-z, ]*\b`+criterion+`\b`, g.report.VerdictReason)
}

// assertNoSandboxLeft reads every sandbox id from the bundled server's audit
// (<state-dir>/audit.jsonl) and checks that none of their network namespaces
// (osb-<first 12 of id>, from `ip netns list`), cgroups or state directories
// remains. Only this run's ids are considered: other test processes on the
// machine (go test ./... runs packages in parallel) create osb-* namespaces
// of their own at the same time.
func assertNoSandboxLeft(t *testing.T, stateDir string) {
	t.Helper()
	f, err := os.Open(filepath.Join(stateDir, "audit.jsonl"))
	require.NoError(t, err, "the bundled server writes its audit to <state-dir>/audit.jsonl")
	defer f.Close()
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev struct {
			SandboxID string `json:"sandbox_id"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.SandboxID != "" {
			ids[ev.SandboxID] = true
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, ids, "the run created no sandbox at all")

	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	require.NoError(t, err, "ip netns list: %s", out)
	var left []string
	for _, line := range strings.Split(string(out), "\n") {
		name := strings.Fields(line + " ")
		if len(name) == 0 || !strings.HasPrefix(name[0], "osb-") {
			continue
		}
		for id := range ids {
			if len(id) >= 12 && name[0] == "osb-"+id[:12] {
				left = append(left, fmt.Sprintf("%s (sandbox %s)", name[0], id))
			}
		}
	}
	// Their cgroups (cgroup v1: <ctrl>/osb/<id>, or <ctrl>/osb/<tenant group>/<id>
	// for a submission's keys) and state directories are gone too.
	for id := range ids {
		for _, ctrl := range []string{"memory", "pids", "cpu", "freezer"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", ctrl, "osb", id)); err == nil {
				left = append(left, "cgroup "+ctrl+"/osb/"+id)
			}
			grouped, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", ctrl, "osb", "*", id))
			for _, g := range grouped {
				left = append(left, "cgroup "+g)
			}
		}
	}
	dirs, _ := os.ReadDir(filepath.Join(stateDir, "sandboxes"))
	for _, d := range dirs {
		left = append(left, "state directory sandboxes/"+d.Name())
	}
	require.Empty(t, left, "this run's sandboxes left traces after runMain returned")
	t.Logf("%d sandbox(es) in the audit, none left (no netns, cgroup or state directory of theirs)", len(ids))
}
