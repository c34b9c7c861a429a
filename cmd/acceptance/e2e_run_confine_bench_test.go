//go:build e2e

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// BenchmarkGradeConfinement grades the reference submission with its
// commands confined (harness/confine) and with --insecure-no-confinement,
// interleaved in one run (confined, unconfined, confined, unconfined …) so
// that the load of a shared machine falls on both alike, and reports the
// wall time of each grade, the ratio of each pair and their spread (the
// budget: a confined reference grade takes at most 20 % longer), each with the
// load average, and the cost split of each grade (grade_cost_test.go).
// It starts real sandboxes and takes minutes:
// go test -tags e2e -run '^$' -bench BenchmarkGradeConfinement -benchtime 1x ./cmd/acceptance/
// ACCEPTANCE_BENCH_ROUNDS (default 3) is the number of pairs;
// ACCEPTANCE_BENCH_TAGS narrows the suite (default: all of it, as a grade).
func BenchmarkGradeConfinement(b *testing.B) {
	e := requireSubjectEnv(b)
	b.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	ref := filepath.Join(e.root, "fixtures", "submissions", "reference")
	rounds := benchEnvInt(b, "ACCEPTANCE_BENCH_ROUNDS", 3)
	meter := newCostMeter(b)
	if meter.err != nil {
		benchLog(b, "cost split: the total is not measured: %v", meter.err)
	}
	modes := []struct {
		name  string
		extra []string
	}{{"confined", nil}, {"unconfined", []string{"--insecure-no-confinement"}}}
	took := map[string][]float64{}
	var ratios []float64
	var out string
	grade := func(b *testing.B, mode string, extra ...string) float64 {
		out = b.TempDir()
		args := []string{"grade", "--out", out, "--state-dir", b.TempDir(), "--wheels", e.wheels,
			"--baselines", b.TempDir(), "--subject-timeout", "5m", "--seed", "11", "--submission-timeout", benchSubmissionTimeout}
		if tags := os.Getenv("ACCEPTANCE_BENCH_TAGS"); tags != "" {
			args = append(args, "--tags", tags)
		}
		args = append(append(args, extra...), ref)
		var stdout, stderr bytes.Buffer
		load0 := loadAvg()
		var code int
		c := meter.measure(&out, func() { code = dispatch(args, &stdout, &stderr) })
		if code == 2 {
			b.Fatalf("acceptance grade exited 2:\n%s%s", stdout.String(), stderr.String())
		}
		took[mode] = append(took[mode], c.wall)
		benchLog(b, "%s (load average %s before, %s after): %s", mode, load0, loadAvg(), lastLine(stdout.String()))
		benchLog(b, "  cost split: %s", c)
		return c.wall
	}
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			// The pair's order alternates too, so neither mode always goes first.
			order := modes
			if r%2 == 1 {
				order = []struct {
					name  string
					extra []string
				}{modes[1], modes[0]}
			}
			w := map[string]float64{}
			for _, m := range order {
				w[m.name] = grade(b, m.name, m.extra...)
			}
			ratios = append(ratios, w["confined"]/w["unconfined"])
			benchLog(b, "round %d: confined %.1fs, unconfined %.1fs, ratio %.3f", r+1, w["confined"], w["unconfined"], ratios[len(ratios)-1])
		}
	}
	for _, m := range modes {
		b.ReportMetric(mean(took[m.name]), m.name+"-s/grade")
		benchLog(b, "%s: %s", m.name, spread(took[m.name], "s"))
	}
	b.ReportMetric(mean(ratios), "confined/unconfined")
	benchLog(b, "confined/unconfined wall time per pair: %s (the goal: at most 1.20)", spread(ratios, ""))
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// spread is "mean M (min A, max B; n N: x1 x2 …)".
func spread(v []float64, unit string) string {
	if len(v) == 0 {
		return "none"
	}
	s := fmt.Sprintf("mean %.3f%s (min %.3f%s, max %.3f%s; n %d:", mean(v), unit, slices.Min(v), unit, slices.Max(v), unit, len(v))
	for _, x := range v {
		s += fmt.Sprintf(" %.3f", x)
	}
	return s + ")"
}
