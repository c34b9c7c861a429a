//go:build e2e

package main

import (
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

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/report"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
)

// TestHostileCalibration grades the hostile set (fixtures/submissions/
// hostile-*, each an honest submission plus ONE real attack on the grader or
// its classmates) in ONE `grade --parallel 2` call, in a grader process of
// its own, together with reference and student, and asserts that every attack
// failed: reference and student get the verdicts they get alone (nothing
// fails); each hostile submission scores no more than the student it is
// built on; nothing outside its output was written (fixtures, baselines, the
// acceptance binary, classmates' bundles: every journal verifies and every
// report.json is what its journal renders); no process of the run, sandbox,
// netns or cgroup outlives it; the grader exits as a grader does (0 or 1,
// never killed) with a class summary of every submission.
// hostileStallBound is the longest the hostile grade may go without
// progress before the test calls it hung: a command is bounded by
// --subject-timeout 3m, a reap by 5m, a box's close by seconds.
const hostileStallBound = 12 * time.Minute

// lastProgress is the newest change to a bundle's progress.log or journal
// under out (zero before the first bundle exists).
func lastProgress(out string) time.Time {
	var last time.Time
	for _, pat := range []string{"*/progress.log", "*/results.jsonl"} {
		files, _ := filepath.Glob(filepath.Join(out, pat))
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil && fi.ModTime().After(last) {
				last = fi.ModTime()
			}
		}
	}
	return last
}

func TestHostileCalibration(t *testing.T) { hostileCalibration(t, "") }

// hostileCalibration grades the set at a confinement level: "" the
// machine's own (auto), else --confinement level; at a level below full
// the members whose attack that level does not stop (hostileReaches) are
// left out of the class, each logged with the reason.
func hostileCalibration(t *testing.T, level string) {
	e := requireSubjectEnv(t)
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	keys, err := report.DefaultJournalKeyDir()
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	// The class directory outlives a failed test (its path is logged): the
	// bundles are the evidence of what went wrong.
	out, err := os.MkdirTemp("", "hostile-class-")
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the graded class is kept for inspection: %s", out)
			return
		}
		_ = os.RemoveAll(out)
	})
	h := &hostileRun{out: out, keys: keys, exe: exe, exeDigest: digestFile(t, exe), level: level}
	t.Cleanup(func() { restoreTrojaned(t, exe) })

	subs := filepath.Join(e.root, "fixtures", "submissions")
	// ACCEPTANCE_HOSTILE=hostile-spy,hostile-forger grades only those (a
	// developer's narrowing; make test grades them all).
	set := hostileSet
	if only := os.Getenv("ACCEPTANCE_HOSTILE"); only != "" {
		set = nil
		for _, c := range hostileSet {
			if strings.Contains(","+only+",", ","+c.dir+",") {
				set = append(set, c)
			}
		}
		t.Logf("ACCEPTANCE_HOSTILE: grading only %s", only)
	}
	if level != "" {
		var kept []hostileCase
		for _, c := range set {
			if why := hostileReaches[level][c.dir]; why != "" {
				t.Logf("%s is left out at level %s: %s", c.dir, level, why)
				continue
			}
			kept = append(kept, c)
		}
		set = kept
	}
	names := []string{"reference", "student"}
	for _, c := range set {
		names = append(names, c.dir)
	}
	dirs := make([]string, len(names))
	for i, n := range names {
		dirs[i] = filepath.Join(subs, n)
	}
	fixturesBefore := digestTree(t, filepath.Join(e.root, "fixtures"))
	baselines := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(baselines, "sentinel.snap"), []byte("untouched\n"), 0o644))
	baselinesBefore := digestTree(t, baselines)
	// A grade that hangs is killed (SIGQUIT) and leaves its sandboxes:
	// shortStateDir reaps them by this state dir's records at the end.
	stateDir := shortStateDir(t)

	cmd := exec.Command(exe, "grade", "--out", h.out, "--state-dir", stateDir, "--wheels", e.wheels,
		"--baselines", baselines, "--subject-timeout", "3m", "--parallel", "2", "--tags", hostileTags)
	if level != "" {
		cmd.Args = append(cmd.Args, "--confinement", level)
	}
	cmd.Args = append(cmd.Args, dirs...)
	if level == string(confine.LevelUID) {
		// No network namespace per command at level uid: the saboteur
		// scans every loopback port it reaches and posts `kill -9 -1` to
		// each. The grade gets a network namespace of its own (loopback
		// only), so that is this grade's ports, never the machine's other
		// servers (other tests' and other users' sandboxes).
		cmd = ownNetns(t, cmd)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	// A grade never waits forever for anything a submission can stall: one
	// that makes no progress (no bundle's progress.log or journal grows) for
	// hostileStallBound is dumped (SIGQUIT: every goroutine's stack, kept in
	// a file named in the failure) and fails the test. Every command is
	// bounded by --subject-timeout (3m), so a grade that moves writes a line
	// well within it, however loaded the machine.
	stall := hostileStallBound
	if v, err := time.ParseDuration(os.Getenv("ACCEPTANCE_HOSTILE_STALL")); err == nil && v > 0 {
		stall = v
	}
	require.NoError(t, cmd.Start())
	var outside func() map[string]any
	if level == string(confine.LevelUID) && hostileIn(set, "hostile-saboteur") {
		outside = outsideSaboteur(t, e.root, cmd.Process.Pid)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var runErr error
	hung := false
	tick := time.NewTicker(15 * time.Second)
	for done := false; !done; {
		select {
		case runErr = <-waited:
			done = true
		case <-tick.C:
			if last := lastProgress(h.out); !last.IsZero() && time.Since(last) > stall && !hung {
				hung = true
				_ = cmd.Process.Signal(syscall.SIGQUIT)
			}
		}
	}
	tick.Stop()
	if hung {
		dump := filepath.Join(os.TempDir(), fmt.Sprintf("hostile-grade-hung-%d.log", cmd.Process.Pid))
		_ = os.WriteFile(dump, stderr.Bytes(), 0o644)
		t.Errorf("the grade made no progress for %s: it hung; its goroutines are in %s", stall, dump)
	}
	t.Logf("acceptance grade (%d submissions, its own process): %v in %s\n%s%s", len(dirs), runErr,
		time.Since(start).Round(time.Second), tail(stdout.String(), 6000), tail(stderr.String(), 4000))
	t.Cleanup(func() { killLeftovers(t, cmd.Process.Pid, h.out, stateDir) })
	t.Cleanup(func() {
		// A grader that was killed leaves its sandboxes: a bundled server
		// started on the same state directory reaps them.
		if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
			if b, err := mockserver.StartBundled(context.Background(), mockserver.BundledConfig{APIKey: "reaper-" + randomHex(8), StateDir: stateDir}); err == nil {
				t.Logf("reaped what the killed grader left: %v", b.Reaped)
				_ = b.Close()
			}
		}
	})

	t.Run("the grader survived", func(t *testing.T) {
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.False(t, ws.Signaled(), "the grader was killed by signal %v", ws.Signal())
		// 3: every submission incomplete and none failed (hostileTags
		// measure a part of the course; a class narrowed by
		// ACCEPTANCE_HOSTILE to members that fail nothing there).
		assert.Contains(t, []int{0, 1, 3}, cmd.ProcessState.ExitCode(), "grade exits 0, 1 or 3 for a class it graded")
		rows := classRows(t, h.out)
		for i, n := range names {
			row, ok := rows[twoDigits(i+1)+"-"+n]
			if assert.True(t, ok, "class.csv has no row for %s", n) {
				assert.NotEqual(t, "unreadable", row["verdict"], "%s: %s", n, row["error"])
			}
		}
	})

	if outside != nil {
		r := outside()
		t.Run("the saboteur's attack beside the whole grade", func(t *testing.T) {
			// Inside the class its 20 s windows rarely meet a classmate's
			// live sandbox (measured: with the tokens off it hit none
			// either), so its attack also runs beside the class for the
			// whole grade, as another uid in the grade's network namespace,
			// on every loopback port as soon as it listens: every execd must
			// refuse it, and the classmates' grades below are their grades
			// alone.
			require.NotNil(t, r, "the saboteur beside the grade left no record")
			t.Logf("the saboteur beside the grade: %v", r)
			assert.EqualValues(t, 0, r["execd_hit"], "the saboteur ran kill -9 -1 in a classmate's sandbox")
			n, _ := r["execd_token_refused"].(float64)
			assert.Positive(t, n, "no execd refused the saboteur: none was live while it ran, or none has a token")
		})
	}

	bundles := map[string]*hostileBundle{}
	for i, n := range names {
		b := &hostileBundle{dir: filepath.Join(h.out, twoDigits(i+1)+"-"+n)}
		b.report = calibrationBundle(t, h.out, i, n)
		b.attacks = attackRecords(b.dir)
		bundles[n] = b
	}
	if level != "" {
		t.Run("every report names the level", func(t *testing.T) {
			for _, n := range names {
				if bundles[n].report != nil {
					hostileLevel(t, bundles[n].dir, confine.Level(level))
				}
			}
		})
	}
	for _, c := range calibrationSet {
		if c.dir == "reference" || c.dir == "student" {
			c := c
			t.Run(c.dir, func(t *testing.T) {
				c.check(t, bundles[c.dir].report)
				// As graded alone: nothing failed (check), and the grade ran
				// to its end (an interrupted or killed one is "aborted"; the
				// verdict is "incomplete" either way, hostileTags measures a
				// part of the course).
				var doc struct {
					Aborted string `json:"aborted"`
				}
				raw, err := os.ReadFile(filepath.Join(bundles[c.dir].dir, report.JSONFile))
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(raw, &doc))
				assert.Empty(t, doc.Aborted, "%s's grade was cut short", c.dir)
				assert.Positive(t, bundles[c.dir].report.Score.Measured, "%s: nothing was measured", c.dir)
			})
		}
	}
	student := bundles["student"].report
	for _, c := range set {
		c, b := c, bundles[c.dir]
		t.Run(c.dir, func(t *testing.T) {
			require.NotNil(t, b.report, "no report")
			if student != nil {
				assert.LessOrEqual(t, b.report.Score.Earned, student.Score.Earned,
					"%s scored more than the honest student it is built on", c.dir)
			}
			failed := map[string]bool{}
			for _, list := range [][]entryJSON{b.report.Criteria, b.report.Milestones, b.report.Drills} {
				for _, en := range list {
					failed[en.ID] = en.Verdict == "failed" || en.Verdict == "harness_error"
				}
			}
			fail := c.fail
			if f, ok := hostileFailsAt[level][c.dir]; ok {
				fail = f
			}
			for _, id := range fail {
				assert.True(t, failed[id], "%s must fail for %s: %s", id, c.dir, findEntry(b.report, id).Reason)
			}
			if c.attack != "" {
				require.NotEmpty(t, b.attacks, "the attack left no record (attack-%s.json) in the bundle", c.attack)
				for _, r := range b.attacks {
					t.Logf("attack record: %v", r)
				}
			}
			if c.check != nil {
				c.check(t, h, b)
			}
		})
	}

	t.Run("nothing written outside its own output", func(t *testing.T) {
		assert.Empty(t, treeChanges(fixturesBefore, digestTree(t, filepath.Join(e.root, "fixtures"))), "fixtures/ changed during the grade")
		assert.Empty(t, treeChanges(baselinesBefore, digestTree(t, baselines)), "the evidence baselines changed during the grade")
		assert.Equal(t, h.exeDigest, digestFile(t, exe), "the acceptance binary changed during the grade")
		for _, n := range names {
			b := bundles[n]
			if b.report == nil {
				continue
			}
			if err := report.VerifyJournal(b.dir, h.keys); err != nil {
				t.Errorf("%s: %v", n, err)
				continue
			}
			fresh := renderCopy(t, b.dir, h.keys)
			assert.Equal(t, fresh.Score.Earned, b.report.Score.Earned, "%s: report.json is not what its journal renders", n)
		}
	})

	t.Run("nothing outlives the run", func(t *testing.T) {
		deadline := time.Now().Add(15 * time.Second)
		var left []string
		for {
			left = leftovers(cmd.Process.Pid, h.out, stateDir)
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Second)
		}
		assert.Empty(t, left, "processes of the graded submissions outlived the grade")
		assertNoSandboxLeft(t, stateDir)
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		for _, d := range []string{h.out, stateDir} {
			assert.NotContains(t, string(mounts), d, "a mount under %s outlived the grade", d)
		}
	})
}
