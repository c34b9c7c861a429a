//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mockserver "github.com/osb-capstone/acceptance/mock-server"
)

// TestHostileCalibration2 is the second hostile calibration round (issue 26,
// docs/hostile.md "Round 2"): fixtures/submissions/hostile2-*, each the
// student plus ONE attack on what a submission reaches through the API, what
// it costs the grader, and what it writes where people read it. It grades
// reference and student ALONE (one `grade --parallel 2`), then the same two
// beside every hostile2 member in ONE `grade --parallel 2`, with the same tags,
// and asserts:
//   - reference and student get exactly the per-entry verdicts and score they
//     got alone, and each one's wall time beside the attackers is within
//     hostile2SlowFactor × its time alone + hostile2SlowSlack;
//   - every hostile2 member scores no more than the student it is built on,
//     and its attack's own checks hold (hostile2Set);
//   - after the grade: no process, sandbox, netns, cgroup, mount or named
//     volume of the grade is left, no file the grade made is setuid, and the
//     grader's descriptors never neared its limit and were back near their
//     baseline at the end;
//   - no file the grader wrote, console line or progress.log line holds a raw
//     control character or a line the grader did not write; Markdown sinks
//     hold no raw HTML, no link the grader did not make, no row with more
//     cells than its header.
func TestHostileCalibration2(t *testing.T) {
	e := requireSubjectEnv(t)
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	exe, err := os.Executable()
	require.NoError(t, err)
	subs := filepath.Join(e.root, "fixtures", "submissions")
	set := hostile2Set
	if only := os.Getenv("ACCEPTANCE_HOSTILE2"); only != "" {
		set = nil
		for _, c := range hostile2Set {
			if strings.Contains(","+only+",", ","+c.dir+",") {
				set = append(set, c)
			}
		}
		t.Logf("ACCEPTANCE_HOSTILE2: grading only %s", only)
	}
	volumes := filepath.Join(mockserver.DefaultStateRoot, "volumes")
	volumesBefore := h2SetuidFiles(volumes)
	// hostile2-volume's named volume, wherever a server left it (its claim
	// name is this round's own): never left on the machine by the test.
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(volumes, "hostile2-shared")) })

	// Alone: reference and student, as the class would have them.
	alone := gradeForHostile2(t, e, exe, subs, "alone", []string{"reference", "student"})
	// Beside the attackers.
	names := hostile2ClassOrder(set)
	idx := map[string]int{}
	for i, n := range names {
		idx[n] = i
	}
	class := gradeForHostile2(t, e, exe, subs, "class", names)

	t.Run("the grader survived", func(t *testing.T) {
		ws, _ := class.cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.False(t, ws.Signaled(), "the grader was killed by signal %v", ws.Signal())
		assert.Contains(t, []int{0, 1}, class.cmd.ProcessState.ExitCode(), "grade exits 0 or 1 for a class it graded")
		rows := classRows(t, class.out)
		for i, n := range names {
			row, ok := rows[twoDigits(i+1)+"-"+n]
			if !ok && n != "reference" && n != "student" {
				continue // labelled by its manifest's name, or refused: checked below
			}
			if assert.True(t, ok, "class.csv has no row for %s", n) {
				assert.NotEqual(t, "unreadable", row["verdict"], "%s: %s", n, row["error"])
			}
		}
	})

	for i, n := range []string{"reference", "student"} {
		i, n := i, n
		t.Run(n+" as alone", func(t *testing.T) {
			a, b := calibrationBundle(t, alone.out, i, n), calibrationBundle(t, class.out, idx[n], n)
			// Only the first bundle may carry the label reference: the
			// injection names itself reference too.
			require.NotNil(t, a, "no report alone")
			require.NotNil(t, b, "no report beside the attackers")
			assert.Positive(t, a.Score.Measured, "%s alone: nothing was measured", n)
			assert.Equal(t, h2Verdicts(a), h2Verdicts(b), "%s: per-entry verdicts beside the attackers differ from alone", n)
			for _, en := range h2Entries(b) {
				if va := h2Verdicts(a)[en.ID]; va != en.Verdict {
					t.Logf("%s %s: alone %s, beside the attackers %s: %s", n, en.ID, va, en.Verdict, en.Reason)
				}
			}
			assert.Equal(t, a.Score.Earned, b.Score.Earned, "%s: score beside the attackers differs from alone", n)
			assert.Equal(t, a.Score.Measured, b.Score.Measured, "%s: measured points beside the attackers differ from alone", n)
			da, db := hostile2Wall(t, filepath.Join(alone.out, twoDigits(i+1)+"-"+n)), hostile2Wall(t, filepath.Join(class.out, twoDigits(idx[n]+1)+"-"+n))
			bound := time.Duration(hostile2SlowFactor*float64(da)) + hostile2SlowSlack
			t.Logf("%s wall time: alone %s, beside the attackers %s (bound %s); graded beside %v", n, da.Round(time.Second), db.Round(time.Second), bound.Round(time.Second),
				h2Beside(class.out, filepath.Join(class.out, twoDigits(idx[n]+1)+"-"+n)))
			assert.LessOrEqual(t, db, bound, "%s took %s beside the attackers, %s alone: over the bound %s×alone+%s", n, db, da, hostile2SlowFactor, hostile2SlowSlack)
		})
	}

	student := calibrationBundle(t, class.out, idx["student"], "student")
	for _, c := range set {
		i, c := idx[c.dir], c
		t.Run(c.dir, func(t *testing.T) {
			// A bundle is named NN-<label>: the label is the manifest's name
			// or the directory's (the injection names itself reference).
			dirs, _ := filepath.Glob(filepath.Join(class.out, twoDigits(i+1)+"-*"))
			if len(dirs) != 1 || h2Missing(filepath.Join(dirs[0], "report.json")) {
				if hostile2MayBeRefused[c.dir] {
					// Refused before it ran (its manifest is an error): nothing
					// to score; what it printed is checked with the console.
					t.Logf("%s was not graded (bundles %v)", c.dir, dirs)
					return
				}
				require.Len(t, dirs, 1, "no single bundle %s-* for %s", twoDigits(i+1), c.dir)
			}
			b := &hostileBundle{dir: dirs[0]}
			b.report = calibrationBundle(t, class.out, i, strings.TrimPrefix(filepath.Base(dirs[0]), twoDigits(i+1)+"-"))
			b.attacks = attackRecords(b.dir)
			require.NotNil(t, b.report, "no report")
			if student != nil {
				assert.LessOrEqual(t, b.report.Score.Earned, student.Score.Earned,
					"%s scored more than the honest student it is built on", c.dir)
			}
			failed := h2Verdicts(b.report)
			for _, id := range c.fail {
				assert.Contains(t, []string{"failed", "harness_error"}, failed[id], "%s must fail for %s: %s", id, c.dir, findEntry(b.report, id).Reason)
			}
			if c.attack != "" {
				require.NotEmpty(t, b.attacks, "the attack left no record (attack-%s.json) in the bundle", c.attack)
				for _, r := range b.attacks {
					t.Logf("attack record: %v", r)
				}
			}
			if c.check != nil {
				c.check(t, &hostileRun{out: class.out, exe: exe}, b)
			}
		})
	}

	t.Run("nothing of the grade is left", func(t *testing.T) {
		deadline := time.Now().Add(15 * time.Second)
		var left []string
		for {
			left = leftovers(class.cmd.Process.Pid, class.out, class.state)
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Second)
		}
		assert.Empty(t, left, "processes of the graded submissions outlived the grade")
		assertNoSandboxLeft(t, class.state)
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		for _, d := range []string{class.out, class.state} {
			assert.NotContains(t, string(mounts), d, "a mount under %s outlived the grade", d)
		}
		assert.Empty(t, h2GraderCgroups(class.cmd.Process.Pid), "cgroups of the grade outlived it")
		_, err := os.Lstat(filepath.Join(volumes, "hostile2-shared"))
		assert.True(t, os.IsNotExist(err), "the named volume hostile2-shared outlived the grade in the machine-wide %s", volumes)
		var vols []string
		_ = filepath.WalkDir(class.state, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "hostile2-shared" {
				vols = append(vols, p)
			}
			return nil
		})
		assert.Empty(t, vols, "the named volume hostile2-shared outlived the grade in its state directory")
		var suid []string
		for _, d := range []string{class.out, class.state} {
			for f := range h2SetuidFiles(d) {
				suid = append(suid, f)
			}
		}
		for f := range h2SetuidFiles(volumes) {
			if !volumesBefore[f] {
				suid = append(suid, f)
			}
		}
		assert.Empty(t, suid, "setuid files of the grade are left on the host")
	})

	t.Run("the grader's descriptors", func(t *testing.T) {
		s := class.fds
		require.NotEmpty(t, s.samples, "no sample of the grader's descriptors was taken")
		t.Logf("grader descriptors: baseline %d, peak %d, last %d, limit %d (%d samples)", s.baseline(), s.peak(), s.last(), s.limit, len(s.samples))
		if s.limit > 0 {
			assert.Less(t, s.peak(), s.limit/2, "the grader's descriptors neared its limit")
		}
		assert.LessOrEqual(t, s.last(), s.baseline()+hostile2FdSlack, "the grader's descriptor count was not back near its baseline at the end")
	})

	t.Run("everything the submissions wrote is inert", func(t *testing.T) {
		for _, stream := range []struct{ name, text string }{{"stdout", class.stdout}, {"stderr", class.stderr}} {
			for _, p := range h2InertProblems(stream.text) {
				t.Errorf("console %s: %s", stream.name, p)
			}
		}
		labels := regexp.MustCompile(`(?m)^\[\d+/\d+\] (?:\d\d-)?reference verdict`).FindAllString(class.stdout, -1)
		assert.LessOrEqual(t, len(labels), 1, "two submissions share the console label reference")
		_ = filepath.WalkDir(class.out, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() && (d.Name() == "evidence" || d.Name() == "out") {
				return filepath.SkipDir // the submissions' own bytes, as evidence
			}
			if !d.Type().IsRegular() {
				return nil
			}
			info, err := d.Info()
			if err != nil || info.Size() > 64<<20 {
				return nil
			}
			raw, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			name := rel(class.out, p)
			text := string(raw)
			// JSON holds a submission's text as data, escaped; Gradescope's
			// results.json is Markdown people read once rendered: its strings
			// are checked as text.
			if d.Name() == "results.json" && json.Valid(raw) {
				var v any
				_ = json.Unmarshal(raw, &v)
				text = strings.Join(h2JSONStrings(v), "\n")
			}
			// Every file: no raw control character. Line-oriented text people
			// read (logs, Markdown, Gradescope's output): no forged line
			// either; in JSON, XML, HTML and CSV a newline of the
			// submission's is data, escaped or quoted.
			lines := strings.HasSuffix(p, ".log") || strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".txt") || d.Name() == "results.json"
			for _, prob := range h2InertProblems(text) {
				if lines || strings.HasPrefix(prob, "raw control") {
					t.Errorf("%s: %s", name, prob)
				}
			}
			switch {
			case strings.HasSuffix(p, ".md") || d.Name() == "results.json":
				for _, prob := range h2MarkdownProblems(text) {
					t.Errorf("%s: %s", name, prob)
				}
			case strings.HasSuffix(p, ".html"):
				if strings.Contains(text, "<img src=x") || strings.Contains(text, `href="javascript:`) {
					t.Errorf("%s: raw HTML or a javascript: link from a submission", name)
				}
			}
			return nil
		})
	})
}

// hostile2Tags: every command an attack rides on (contract: M0; run: M2's
// function scenario; test: M4's maintainability), nothing else. godog splits
// on "," first: each alternative carries its own exclusions (tagsExcept).
var hostile2Tags = tagsExcept([]string{"@milestone:M0", "@milestone:M2 && @criterion:function",
	"@milestone:M4 && @criterion:maintainability"}, "@large", "@agent")

const (
	// An honest member's wall time beside the attackers is at most
	// hostile2SlowFactor × its time alone + hostile2SlowSlack (docs/hostile.md).
	hostile2SlowFactor = 2.0
	hostile2SlowSlack  = 90 * time.Second
	// hostile2FdSlack: the grader's descriptors at the end of the grade are
	// at most this many above their baseline.
	hostile2FdSlack = 128
)

// hostile2ClassOrder is the class's argument order: reference, student,
// then the attackers. It names the bundles (NN-…) only: grade starts its
// members in no fixed order (each waits for one of the --parallel slots), so
// which attackers run beside an honest member varies from run to run; the
// test logs it (h2Beside).
func hostile2ClassOrder(set []hostileCase) []string {
	names := []string{"reference", "student"}
	for _, c := range set {
		names = append(names, c.dir)
	}
	return names
}

// h2Beside names the bundles of out whose grading overlapped dir's in time.
func h2Beside(out, dir string) []string {
	read := func(d string, v any) bool {
		raw, err := os.ReadFile(filepath.Join(d, "report.json"))
		return err == nil && json.Unmarshal(raw, v) == nil
	}
	type span struct {
		StartedAt time.Time `json:"started_at"`
		EndedAt   time.Time `json:"ended_at"`
	}
	var me span
	if !read(dir, &me) {
		return nil
	}
	var beside []string
	all, _ := filepath.Glob(filepath.Join(out, "[0-9][0-9]-*"))
	for _, d := range all {
		var o span
		if d != dir && read(d, &o) && o.StartedAt.Before(me.EndedAt) && me.StartedAt.Before(o.EndedAt) {
			beside = append(beside, filepath.Base(d))
		}
	}
	return beside
}

type hostile2Grade struct {
	cmd            *exec.Cmd
	out, state     string
	stdout, stderr string
	fds            *h2FdSamples
}

// gradeForHostile2 grades the named submissions in ONE `grade --parallel 2`
// in a grader process of its own, sampling its descriptors, with a stall
// guard as TestHostileCalibration's.
func gradeForHostile2(t *testing.T, e subjectEnv, exe, subs, label string, names []string) *hostile2Grade {
	t.Helper()
	out, err := os.MkdirTemp("", "hostile2-"+label+"-")
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the %s grade is kept for inspection: %s", label, out)
			return
		}
		_ = os.RemoveAll(out)
	})
	g := &hostile2Grade{out: out, state: t.TempDir(), fds: &h2FdSamples{}}
	baselines := t.TempDir()
	args := []string{"grade", "--out", out, "--state-dir", g.state, "--wheels", e.wheels, "--baselines", baselines,
		"--subject-timeout", "3m", "--parallel", "2", "--verbose", "--tags", hostile2Tags}
	for _, n := range names {
		args = append(args, filepath.Join(subs, n))
	}
	g.cmd = exec.Command(exe, args...)
	var stdout, stderr bytes.Buffer
	g.cmd.Stdout, g.cmd.Stderr = &stdout, &stderr
	start := time.Now()
	require.NoError(t, g.cmd.Start())
	pid := g.cmd.Process.Pid
	t.Cleanup(func() { killLeftovers(t, pid, out, g.state) })
	t.Cleanup(func() {
		if ws, _ := g.cmd.ProcessState.Sys().(syscall.WaitStatus); g.cmd.ProcessState != nil && ws.Signaled() {
			if b, err := mockserver.StartBundled(context.Background(), mockserver.BundledConfig{APIKey: "reaper-" + randomHex(8), StateDir: g.state}); err == nil {
				t.Logf("reaped what the killed grader left: %v", b.Reaped)
				_ = b.Close()
			}
		}
	})
	waited := make(chan error, 1)
	go func() { waited <- g.cmd.Wait() }()
	stall := hostileStallBound
	if v, err := time.ParseDuration(os.Getenv("ACCEPTANCE_HOSTILE_STALL")); err == nil && v > 0 {
		stall = v
	}
	var runErr error
	hung := false
	tick := time.NewTicker(2 * time.Second)
	for done := false; !done; {
		select {
		case runErr = <-waited:
			done = true
		case <-tick.C:
			g.fds.sample(pid)
			if last := lastProgress(out); !last.IsZero() && time.Since(last) > stall && !hung {
				hung = true
				_ = g.cmd.Process.Signal(syscall.SIGQUIT)
			}
		}
	}
	tick.Stop()
	g.stdout, g.stderr = stdout.String(), stderr.String()
	if hung {
		dump := filepath.Join(os.TempDir(), fmt.Sprintf("hostile2-grade-hung-%d.log", pid))
		_ = os.WriteFile(dump, stderr.Bytes(), 0o644)
		t.Errorf("the %s grade made no progress for %s: it hung; its goroutines are in %s", label, stall, dump)
	}
	t.Logf("%s grade (%d submissions, its own process): %v in %s\n%s%s", label, len(names), runErr,
		time.Since(start).Round(time.Second), tail(g.stdout, 6000), tail(g.stderr, 3000))
	return g
}

// h2FdSamples are the grader's open descriptor counts, every 2 s of its life.
type h2FdSamples struct {
	samples []int
	limit   int
}

func (s *h2FdSamples) sample(pid int) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return
	}
	s.samples = append(s.samples, len(ents))
	if s.limit == 0 {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid)); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); strings.HasPrefix(l, "Max open files") && len(f) > 3 {
					s.limit, _ = strconv.Atoi(f[3])
				}
			}
		}
	}
}

// baseline is the median of the first ten samples (the grader with its
// server up, before the class loads it).
func (s *h2FdSamples) baseline() int {
	n := len(s.samples)
	if n > 10 {
		n = 10
	}
	first := append([]int(nil), s.samples[:n]...)
	sort.Ints(first)
	if len(first) == 0 {
		return 0
	}
	return first[len(first)/2]
}

func (s *h2FdSamples) peak() int {
	p := 0
	for _, v := range s.samples {
		if v > p {
			p = v
		}
	}
	return p
}

func (s *h2FdSamples) last() int {
	if len(s.samples) == 0 {
		return 0
	}
	return s.samples[len(s.samples)-1]
}

func h2Missing(p string) bool {
	_, err := os.Stat(p)
	return err != nil
}

func h2Entries(r *calibReport) []entryJSON {
	var all []entryJSON
	for _, list := range [][]entryJSON{r.Criteria, r.Milestones, r.Drills} {
		all = append(all, list...)
	}
	return all
}

func h2Verdicts(r *calibReport) map[string]string {
	m := map[string]string{}
	if r == nil {
		return m
	}
	for _, en := range h2Entries(r) {
		m[en.ID] = en.Verdict
	}
	return m
}

// hostile2Wall is a submission's wall time: report.json's started_at to ended_at.
func hostile2Wall(t *testing.T, dir string) time.Duration {
	t.Helper()
	var doc struct {
		StartedAt time.Time `json:"started_at"`
		EndedAt   time.Time `json:"ended_at"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.False(t, doc.StartedAt.IsZero() || doc.EndedAt.IsZero(), "%s: report.json has no started_at/ended_at", dir)
	return doc.EndedAt.Sub(doc.StartedAt)
}

// h2GraderCgroups are cgroups named after the grader's boxes (acc-<pid>-…).
func h2GraderCgroups(pid int) []string {
	var left []string
	prefix := fmt.Sprintf("acc-%d-", pid)
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), prefix) {
			left = append(left, p)
			return filepath.SkipDir
		}
		return nil
	})
	return left
}

// h2SetuidFiles are the setuid or setgid regular files under dir.
func h2SetuidFiles(dir string) map[string]bool {
	out := map[string]bool{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			out[p] = true
		}
		return nil
	})
	return out
}
