//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDeterminism grades the honest members of fixtures/submissions several
// times, alone and inside a class, and fails if any entry of a member gets
// two different verdicts, printing both with their reasons (issue 27 item 3:
// the same submission gets the same grade). The members are reference (Go,
// raw HTTP), student (the official Python SDK) and literal (standard-library
// Python that takes HTTP statuses literally and confirms nothing).
//
// What is graded: every drill and the milestones whose verdict depends on
// when something happens on the server (determinismTags): every drill of the course, M0 (the
// contract check against what the server saw) and M1 (three runs that delete
// and check the 404, the execd 500 fault, the destroyed sandbox out of
// reach). M2–M5 are left out: their verdicts are functions of the outputs,
// the create request and the recomputation, not of when a fault lands, and
// TestCalibration grades them on every CI run. Agent scenarios are left out
// (no member has a model). A verdict a fault cannot make deterministic must
// be "not measured" with a reason: that is a verdict like any other and must
// be the same every time.
//
// How often (the knobs), by default the measure, 5 alone and 5 in a
// class, 30 grades in all (about 12 commands each):
//   - ACCEPTANCE_DETERMINISM_ALONE=M (default 5): each member graded alone M
//     times, each grade in a process of its own with its own bundled server;
//   - ACCEPTANCE_DETERMINISM_RUNS=N (default 5): N copies of each member, in
//     directories of their own (reference-1, student-2 …), graded as one
//     class in one `grade --parallel W` call (in this process);
//   - ACCEPTANCE_DETERMINISM_PARALLEL=W (default 3): the class grades W
//     submissions at once, and beside it W alone grades run at a time (the
//     members take turns, so each member's alone grades meet every load of
//     the run). A grade mostly waits (sandbox starts, the subject's polls
//     and back-offs): in CI's last run three alone grades at once took
//     37–57 s each, about what one grade takes alone (49 s at load 7), so
//     the two phases run side by side, 2W grades at once, not one after
//     the other.
//
// Time: the previous default (9 grades, 3 at once, one phase after the
// other) took 157 s in CI. This one was measured on the shared 2-core
// machine at load 20–45 (median 27, other helpers' tests beside it): 30
// grades in 1631 s, each 2.5–8 min, every entry of the three members the
// same in all 10 grades. Not yet measured in CI; estimated at 250 s (if 6
// grades at once still only wait) to 520 s (if CPU-bound: CI's last run
// spent 17 s of theme time per grade), within the theme's 600 s budget
// beside the calibration theme's ~900 s.
//
// What 10 grades catch: a fault that hits a fraction p of grades goes
// unseen when all 10 grades of every member agree, with probability
// (p¹⁰+(1-p)¹⁰)³ across the three members: 4% at p=0.1, 0.1% at p=0.2 (the
// D2 race of issue 27 in a class: 6 of 31), below 10⁻⁶ at p=0.4 (that race
// alone: 2 of 5); 21% at p=0.05. With 3 grades (the old default) it was 39%
// at p=0.1 and 14% at p=0.2. The odds are real: on main before the removal
// fix (h-gone), a run with 3 grades each saw that race in none of its 9
// grades and passed, while 3 of 6 grades of literal alone on @drill:D2 alone
// hit it; with the fix merged, this test passed and 6 of 6 such grades
// passed D2.
func TestDeterminism(t *testing.T) {
	e := requireSubjectEnv(t)
	// The student runs `python3` from PATH: the SDK venv first (fixtures/submissions/README.md).
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	runs := determinismKnob(t, "ACCEPTANCE_DETERMINISM_RUNS", 5)
	alone := determinismKnob(t, "ACCEPTANCE_DETERMINISM_ALONE", 5)
	width := determinismKnob(t, "ACCEPTANCE_DETERMINISM_PARALLEL", 3)
	exe, err := os.Executable()
	require.NoError(t, err)
	subs := filepath.Join(e.root, "fixtures", "submissions")
	start := time.Now()

	seen := map[string][]gradeObservation{} // member → every grade of it

	// The class: runs copies of each member, in differently named
	// directories, graded in one `grade --parallel width` call, in this
	// process, while the alone grades run beside it.
	class := t.TempDir()
	var dirs []string
	for k := 1; k <= runs; k++ {
		for _, m := range determinismMembers {
			d := filepath.Join(class, m+"-"+strconv.Itoa(k))
			copyDeterminismMember(t, filepath.Join(subs, m), d)
			dirs = append(dirs, d)
		}
	}
	out, state := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	var code int
	var classTook time.Duration
	classDone := make(chan struct{})
	go func() {
		defer close(classDone)
		t0 := time.Now()
		code = dispatch(append(determinismGradeArgs(t, e, out, state, width), dirs...), &stdout, &stderr)
		classTook = time.Since(t0)
	}()

	// Alone: alone × each member, each in a grade process of its own (its
	// own bundled server, state dir and output), width of them at a time.
	// The members take turns, so every member's grades spread over the
	// whole phase and meet every load it has.
	type aloneGrade struct {
		member, out, state string
		round              int
	}
	grades := make([]aloneGrade, 0, alone*len(determinismMembers))
	for round := 1; round <= alone; round++ {
		for _, m := range determinismMembers {
			grades = append(grades, aloneGrade{member: m, round: round, out: t.TempDir(), state: t.TempDir()})
		}
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	slots := make(chan struct{}, width)
	for _, g := range grades {
		args := append(determinismGradeArgs(t, e, g.out, g.state, 1), filepath.Join(subs, g.member))
		wg.Add(1)
		slots <- struct{}{}
		go func(g aloneGrade, args []string) {
			defer func() { <-slots; wg.Done() }()
			// Output to a file, not a pipe, and SIGTERM (grade cleans up
			// on it) if this test process dies: a grade never dies of a
			// broken pipe halfway, leaving its sandboxes behind.
			log := filepath.Join(t.TempDir(), "grade.log")
			f, err := os.Create(log)
			if err != nil {
				t.Errorf("alone #%d: %s: %v", g.round, g.member, err)
				return
			}
			cmd := exec.Command(exe, args...)
			cmd.Stdout, cmd.Stderr = f, f
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
			t1 := time.Now()
			err = cmd.Run()
			f.Close()
			b, _ := os.ReadFile(log)
			t.Logf("alone #%d: grade %s: %v in %s\n%s", g.round, g.member, err, time.Since(t1).Round(time.Second), b)
		}(g, args)
	}
	wg.Wait()
	aloneTook := time.Since(t0)
	<-classDone
	t.Logf("class of %d: acceptance grade exit %d in %s\n%s%s", len(dirs), code, classTook.Round(time.Second), stdout.String(), stderr.String())

	for _, g := range grades {
		assertNoSandboxLeft(t, g.state)
		got := readDeterminismBundles(t, g.out, fmt.Sprintf("alone #%d", g.round))
		require.Len(t, got, 1, "the alone grade #%d of %s wrote one bundle", g.round, g.member)
		for dir, o := range got {
			require.Equal(t, g.member, dir, "the alone grade #%d of %s graded it", g.round, g.member)
			seen[g.member] = append(seen[g.member], o)
		}
	}
	require.NotEqual(t, 2, code, "acceptance grade must grade the class, not fail on usage")
	assertNoSandboxLeft(t, state)
	got := readDeterminismBundles(t, out, "class")
	require.Len(t, got, len(dirs), "one bundle per submission of the class")
	for dir, o := range got {
		i := strings.LastIndexByte(dir, '-')
		require.Positive(t, i, "bundle of an unknown submission %q", dir)
		m := dir[:i]
		o.label = "class copy " + dir
		seen[m] = append(seen[m], o)
	}
	t.Logf("graded each member %d times in %s: %d alone (%d grades, %d at a time, %s) beside %d in a class of %d (--parallel %d, %s)",
		alone+runs, time.Since(start).Round(time.Second), alone, len(grades), width, aloneTook.Round(time.Second),
		runs, len(dirs), width, classTook.Round(time.Second))

	for _, m := range determinismMembers {
		t.Run(m, func(t *testing.T) {
			obs := seen[m]
			require.Len(t, obs, alone+runs, "every grade of %s was read", m)
			compareDeterminism(t, obs)
		})
	}
}

// determinismMembers are the honest members graded (fixtures/submissions).
var determinismMembers = []string{"reference", "student", "literal"}

// determinismTags: every drill and the timing-exposed milestones, no agent
// scenario. godog splits on "," before "&&" (an OR of ANDs, no grouping), so
// each alternative carries its own negation.
var determinismTags = tagsExcept(append(drillTags(), "@milestone:M0", "@milestone:M1"), "@agent")

func determinismGradeArgs(t *testing.T, e subjectEnv, out, state string, parallel int) []string {
	return []string{"grade",
		"--out", out,
		"--state-dir", state,
		"--wheels", e.wheels,
		"--baselines", t.TempDir(), // drift is not under test; never write into the repo
		"--subject-timeout", "5m",
		"--parallel", strconv.Itoa(parallel),
		"--tags", determinismTags,
	}
}

func determinismKnob(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s must be a whole number", name)
	require.Positive(t, n, "%s must be at least 1", name)
	return n
}

// gradeObservation is one grade of a member: each entry's verdict and reasons.
type gradeObservation struct {
	label   string
	entries map[string]determinismEntry
}

type determinismEntry struct {
	verdict string
	reason  string // the entry's reason and its non-passing outcomes' reasons
}

// readDeterminismBundles reads every bundle under out, keyed by the graded
// submission's directory name as the bundle records it (run.json), never by
// the bundle's own name.
func readDeterminismBundles(t *testing.T, out, label string) map[string]gradeObservation {
	t.Helper()
	metas, err := filepath.Glob(filepath.Join(out, "*", "run.json"))
	require.NoError(t, err)
	got := map[string]gradeObservation{}
	for _, p := range metas {
		var meta struct {
			Submission    string `json:"submission"`
			SubmissionDir string `json:"submission_dir"`
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &meta), "%s", p)
		dir := meta.Submission
		if dir == "" {
			dir = filepath.Base(meta.SubmissionDir)
		}
		require.NotEmpty(t, dir, "%s names no submission", p)
		b, err = os.ReadFile(filepath.Join(filepath.Dir(p), "report.json"))
		require.NoError(t, err, "bundle of %s has no report.json", dir)
		var r reportJSON
		require.NoError(t, json.Unmarshal(b, &r), "report.json of %s", dir)
		o := gradeObservation{label: label, entries: map[string]determinismEntry{}}
		for _, list := range [][]entryJSON{r.Criteria, r.Milestones, r.Drills} {
			for _, en := range list {
				reasons := []string{en.Reason}
				for _, oc := range en.Outcomes {
					if oc.Verdict != "passed" {
						reasons = append(reasons, oc.Scenario+": "+oc.Verdict+": "+oc.Reason)
					}
				}
				o.entries[en.ID] = determinismEntry{verdict: en.Verdict, reason: strings.Join(reasons, " | ")}
			}
		}
		require.NotEmpty(t, o.entries, "report.json of %s lists no entry", dir)
		got[dir] = o
	}
	return got
}

// compareDeterminism fails for every entry whose verdict differs between two
// grades of the same member, printing both verdicts and reasons; it logs the
// entries that are consistently failed or a harness error (the same verdict
// every time: the calibration judges verdicts, this test their constancy)
// and names those consistently not measured.
func compareDeterminism(t *testing.T, obs []gradeObservation) {
	t.Helper()
	ids := map[string]bool{}
	for _, o := range obs {
		for id := range o.entries {
			ids[id] = true
		}
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	var unmeasured []string
	for _, id := range sorted {
		first := obs[0].entries[id]
		differs := false
		for _, o := range obs[1:] {
			en := o.entries[id]
			if en.verdict != first.verdict {
				differs = true
				t.Errorf("%s: %s in %s but %s in %s\n  %s: %s\n  %s: %s", id, first.verdict, obs[0].label, en.verdict, o.label,
					obs[0].label, first.reason, o.label, en.reason)
			}
		}
		switch {
		case differs || first.verdict == "passed":
		case first.verdict == "not_measured":
			unmeasured = append(unmeasured, id)
		default:
			t.Logf("%s: %s in all %d grades (%s)", id, first.verdict, len(obs), first.reason)
		}
	}
	if len(unmeasured) > 0 {
		t.Logf("not measured in all %d grades (outside the tags, or a reviewer's call): %s", len(obs), strings.Join(unmeasured, " "))
	}
}

// copyDeterminismMember copies a submission directory (regular files and
// directories; a fixture has nothing else) to dst.
func copyDeterminismMember(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			if fi.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(to, 0o755)
		case fi.Mode().IsRegular():
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			w, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(w, in); err != nil {
				w.Close()
				return err
			}
			return w.Close()
		default:
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
	}))
}
