//go:build e2e

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkGradeConfinement grades the reference submission with its
// commands confined (harness/confine) and with --insecure-no-confinement,
// side by side in one run, and reports the wall time of each grade and the
// ratio (issue 16: a confined reference grade takes at most 20 % longer).
// It starts real sandboxes and takes minutes:
// go test -run '^$' -bench BenchmarkGradeConfinement -benchtime 1x ./cmd/acceptance/
// ACCEPTANCE_BENCH_TAGS narrows the suite (default: all of it, as a grade).
func BenchmarkGradeConfinement(b *testing.B) {
	e := requireSubjectEnv(b)
	b.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	ref := filepath.Join(e.root, "fixtures", "submissions", "reference")
	took := map[string]time.Duration{}
	grade := func(b *testing.B, mode string, extra ...string) {
		args := []string{"grade", "--out", b.TempDir(), "--state-dir", b.TempDir(), "--wheels", e.wheels,
			"--baselines", b.TempDir(), "--subject-timeout", "5m", "--seed", "11"}
		if tags := os.Getenv("ACCEPTANCE_BENCH_TAGS"); tags != "" {
			args = append(args, "--tags", tags)
		}
		args = append(append(args, extra...), ref)
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := dispatch(args, &stdout, &stderr)
		took[mode] += time.Since(start)
		if code == 2 {
			b.Fatalf("acceptance grade exited 2:\n%s%s", stdout.String(), stderr.String())
		}
		b.Logf("%s: %s", mode, lastLine(stdout.String()))
	}
	for _, m := range []struct {
		name  string
		extra []string
	}{{"confined", nil}, {"unconfined", []string{"--insecure-no-confinement"}}} {
		b.Run(m.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				grade(b, m.name, m.extra...)
			}
			b.ReportMetric(took[m.name].Seconds()/float64(b.N), "s/grade")
		})
	}
	if took["unconfined"] > 0 {
		b.Logf("confined/unconfined wall time: %.3f", took["confined"].Seconds()/took["unconfined"].Seconds())
	}
}
