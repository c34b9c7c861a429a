//go:build linux

package runtime_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// rssKB sums VmRSS of the given host pids.
func rssKB(pids []int) float64 {
	var sum float64
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/status")
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				f := strings.Fields(l)
				if len(f) >= 2 {
					v, _ := strconv.ParseFloat(f[1], 64)
					sum += v
				}
			}
		}
	}
	return sum
}

// BenchmarkCreateReady measures create → execd /ping answered (destroy is
// excluded from the timing), and reports the resident memory of an idle
// sandbox (agent + entrypoint + bwrap) in kB.
func BenchmarkCreateReady(b *testing.B) {
	rt := newRuntime(b)
	prof, _ := runtime.ProfileFor("python:3.11")
	var rss float64
	for i := 0; i < b.N; i++ {
		sb, err := rt.Create(context.Background(), runtime.Spec{ID: uuid.NewString(), Profile: prof,
			Entrypoint: []string{"tail", "-f", "/dev/null"}, Limits: runtime.Limits{MemoryBytes: 512 << 20, Pids: 256}})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		rss += rssKB(sb.Pids())
		if err := sb.Destroy(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(rss/float64(b.N), "idle-rss-kB")
}

// BenchmarkExecRoundTrip measures POST /command "echo hi" until the terminal
// event, over the execd socket.
func BenchmarkExecRoundTrip(b *testing.B) {
	rt := newRuntime(b)
	sb := newSandbox(b, rt)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := sh(b, sb, "echo hi")
		if !r.ok() {
			b.Fatalf("echo failed: %s", r.Raw)
		}
	}
}
