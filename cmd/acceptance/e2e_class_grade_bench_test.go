//go:build e2e

package main

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkGradeClass grades N submissions of the calibration set (cycled:
// some repeat when N > 16) in one `acceptance grade` call, and the same N
// one by one (a grade call each: its own bundled server, stubs, preflight
// and inputs), and reports the wall time per submission of each.
//
// It starts real sandboxes and takes minutes: run it alone, once
// (`make bench-grade`, or
// go test -run '^$' -bench BenchmarkGradeClass -benchtime 1x ./cmd/acceptance/).
// ACCEPTANCE_BENCH_N (default 4), ACCEPTANCE_BENCH_PARALLEL (--parallel of
// the one call, default 2; a list such as "1,2,4" grades the class in one
// call at each), ACCEPTANCE_BENCH_ONE_BY_ONE=0 (leave out the one-by-one
// grades) and ACCEPTANCE_BENCH_TAGS (default: the whole suite, as a grade)
// vary it. Every figure is logged with the machine's load average; figures
// on a shared machine are noisy.
func BenchmarkGradeClass(b *testing.B) {
	e := requireSubjectEnv(b)
	b.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	n := benchEnvInt(b, "ACCEPTANCE_BENCH_N", 4)
	var parallels []int
	for _, p := range strings.Split(cmp.Or(os.Getenv("ACCEPTANCE_BENCH_PARALLEL"), "2"), ",") {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 {
			b.Fatalf("ACCEPTANCE_BENCH_PARALLEL=%q: want a number or a list of numbers, each at least 1", os.Getenv("ACCEPTANCE_BENCH_PARALLEL"))
		}
		parallels = append(parallels, v)
	}
	tags := os.Getenv("ACCEPTANCE_BENCH_TAGS")
	// Past the set's 16, a repeated submission is a link of its own (grade
	// drops a directory named twice; through the link it is another one).
	dirs := make([]string, n)
	links := b.TempDir()
	for i := range dirs {
		c := calibrationSet[i%len(calibrationSet)]
		dirs[i] = filepath.Join(e.root, "fixtures", "submissions", c.dir)
		if i >= len(calibrationSet) {
			link := filepath.Join(links, fmt.Sprintf("%s-%d", c.dir, i/len(calibrationSet)+1))
			if err := os.Symlink(dirs[i], link); err != nil {
				b.Fatal(err)
			}
			dirs[i] = link
		}
	}
	// verdicts: each submission's summary line (verdict and score), by directory.
	verdicts := map[string]map[string]string{}
	meter := newCostMeter(b)
	if meter.err != nil {
		benchLog(b, "cost split: the total (and so the sandboxes' share) is not measured: %v", meter.err)
	}
	var lastOut string
	grade := func(b *testing.B, mode string, subs []string, par int) {
		lastOut = b.TempDir()
		args := []string{"grade", "--out", lastOut, "--state-dir", b.TempDir(), "--wheels", e.wheels,
			"--baselines", b.TempDir(), "--subject-timeout", "5m", "--parallel", strconv.Itoa(par), "--submission-timeout", benchSubmissionTimeout}
		if tags != "" {
			args = append(args, "--tags", tags)
		}
		var stdout, stderr bytes.Buffer
		if code := dispatch(append(args, subs...), &stdout, &stderr); code == 2 {
			b.Fatalf("acceptance grade exited 2:\n%s%s", stdout.String(), stderr.String())
		}
		if verdicts[mode] == nil {
			verdicts[mode] = map[string]string{}
		}
		for _, line := range strings.Split(stdout.String(), "\n") {
			for _, d := range subs {
				if rest, ok := strings.CutPrefix(line, d+" "); ok && strings.Contains(rest, "verdict:") {
					verdicts[mode][d] = strings.TrimSpace(rest)
				}
			}
		}
	}
	for _, parallel := range parallels {
		mode := fmt.Sprintf("one-call-parallel%d", parallel)
		b.Run(fmt.Sprintf("one-call-n%d-parallel%d", n, parallel), func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				load0 := loadAvg()
				stop := profileTop(b, fmt.Sprintf("grade-class-one-call-n%d-parallel%d", n, parallel))
				c := meter.measure(&lastOut, func() { grade(b, mode, dirs, parallel) })
				stop()
				total += time.Since(start)
				benchLog(b, "cost split, the class in one call (--parallel %d; load average %s before, %s after): %s", parallel, load0, loadAvg(), c)
				if c.err == nil {
					b.ReportMetric(pctOf(c.self, c.total()), "grader+server-%")
				}
				bundles, _ := filepath.Glob(filepath.Join(lastOut, "[0-9][0-9]-*"))
				for _, bd := range bundles {
					benchLog(b, "  %s: wall %.1fs; its commands: %s", filepath.Base(bd), bundleWall(bd), submissionCost(bd))
				}
			}
			b.ReportMetric(total.Seconds()/float64(b.N*n), "s/submission")
			b.ReportMetric(100*total.Seconds()/float64(b.N*n)/60, "min/100-submissions")
		})
	}
	if os.Getenv("ACCEPTANCE_BENCH_ONE_BY_ONE") != "0" {
		b.Run(fmt.Sprintf("one-by-one-n%d", n), func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				for j, d := range dirs {
					load0 := loadAvg()
					c := meter.measure(&lastOut, func() { grade(b, "one-by-one", []string{d}, 1) })
					benchLog(b, "cost split, %s graded alone (load average %s before, %s after): %s", filepath.Base(d), load0, loadAvg(), c)
					if j == 0 && c.err == nil && filepath.Base(d) == "reference" {
						b.ReportMetric(pctOf(c.self, c.total()), "reference-grader+server-%")
					}
				}
				total += time.Since(start)
			}
			b.ReportMetric(total.Seconds()/float64(b.N*n), "s/submission")
			b.ReportMetric(100*total.Seconds()/float64(b.N*n)/60, "min/100-submissions")
		})
	}
	// Grading at once must grade as one by one does, at any --parallel: the
	// same verdicts and scores.
	modes := []string{"one-by-one"}
	for _, parallel := range parallels {
		modes = append(modes, fmt.Sprintf("one-call-parallel%d", parallel))
	}
	for _, d := range dirs {
		first, firstMode := "", ""
		for _, m := range modes {
			v := verdicts[m][d]
			if v == "" {
				continue
			}
			benchLog(b, "%s: %s: %s", filepath.Base(d), m, v)
			if first == "" {
				first, firstMode = v, m
			} else if v != first {
				b.Errorf("%s graded differently %s (%s) and %s (%s)", d, firstMode, first, m, v)
			}
		}
	}
}
