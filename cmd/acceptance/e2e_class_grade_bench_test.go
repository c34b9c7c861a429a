//go:build e2e

package main

import (
	"bytes"
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
// the one call, default 2) and ACCEPTANCE_BENCH_TAGS (default: the whole
// suite, as a grade) vary it. Figures on a shared machine are noisy.
func BenchmarkGradeClass(b *testing.B) {
	e := requireSubjectEnv(b)
	b.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	n := benchEnvInt(b, "ACCEPTANCE_BENCH_N", 4)
	parallel := benchEnvInt(b, "ACCEPTANCE_BENCH_PARALLEL", 2)
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
		b.Logf("cost split: the total (and so the sandboxes' share) is not measured: %v", meter.err)
	}
	var lastOut string
	grade := func(b *testing.B, mode string, subs []string, par int) {
		lastOut = b.TempDir()
		args := []string{"grade", "--out", lastOut, "--state-dir", b.TempDir(), "--wheels", e.wheels,
			"--baselines", b.TempDir(), "--subject-timeout", "5m", "--parallel", strconv.Itoa(par)}
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
	b.Run(fmt.Sprintf("one-call-n%d-parallel%d", n, parallel), func(b *testing.B) {
		var total time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			stop := profileTop(b, fmt.Sprintf("grade-class-one-call-n%d", n))
			c := meter.measure(func() { grade(b, "one-call", dirs, parallel) })
			stop()
			total += time.Since(start)
			sub, peak, cmds := submissionCost(lastOut)
			c.subCPU, c.peakRSSKiB, c.commands = sub, peak, cmds
			b.Logf("cost split, the class in one call (--parallel %d): %s", parallel, c)
			if c.err == nil {
				b.ReportMetric(pctOf(c.self, c.total), "grader+server-%")
			}
			bundles, _ := filepath.Glob(filepath.Join(lastOut, "[0-9][0-9]-*"))
			for _, bd := range bundles {
				cpu, pk, k := submissionCost(bd)
				b.Logf("  %s: wall %.1fs; its commands %.1f CPU-s, peak RSS %d MiB (%d commands)", filepath.Base(bd), bundleWall(bd), cpu, pk/1024, k)
			}
		}
		b.ReportMetric(total.Seconds()/float64(b.N*n), "s/submission")
		b.ReportMetric(100*total.Seconds()/float64(b.N*n)/60, "min/100-submissions")
	})
	b.Run(fmt.Sprintf("one-by-one-n%d", n), func(b *testing.B) {
		var total time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			for j, d := range dirs {
				c := meter.measure(func() { grade(b, "one-by-one", []string{d}, 1) })
				c.subCPU, c.peakRSSKiB, c.commands = submissionCost(lastOut)
				b.Logf("cost split, %s graded alone: %s", filepath.Base(d), c)
				if j == 0 && c.err == nil && filepath.Base(d) == "reference" {
					b.ReportMetric(pctOf(c.self, c.total), "reference-grader+server-%")
				}
			}
			total += time.Since(start)
		}
		b.ReportMetric(total.Seconds()/float64(b.N*n), "s/submission")
		b.ReportMetric(100*total.Seconds()/float64(b.N*n)/60, "min/100-submissions")
	})
	// Grading at once must grade as one by one does: the same verdicts and scores.
	for _, d := range dirs {
		one, many := verdicts["one-by-one"][d], verdicts["one-call"][d]
		b.Logf("%s: one call: %s | one by one: %s", filepath.Base(d), many, one)
		if one != "" && many != "" && one != many {
			b.Errorf("%s graded differently in one call (%s) and alone (%s)", d, many, one)
		}
	}
}
