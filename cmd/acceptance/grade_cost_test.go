package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/harness/report"
)

// costMeter splits the CPU of grading into the grader's own, the
// submissions' and the sandboxes'. The benchmark process is moved into a
// cpuacct cgroup of its own (v1 cpuacct, or a v2 cgroup's cpu.stat): every
// process it starts afterwards, the bundled server's sandboxes included,
// is charged there, reaped or not, and nothing of the other sessions on
// the machine is.
//
//   - total: the cgroup's CPU (the whole tree);
//   - grader and bundled server: this process's own CPU (getrusage SELF: the
//     harness, the in-process bundled server, the stubs);
//   - the submission: its commands' own CPU and peak RSS, as the subject
//     runner records them in each command's evidence (result.cpu_seconds,
//     result.peak_rss_kib: child rusage, until commands get cgroups of
//     their own);
//   - the sandboxes: the rest (the sandboxes' processes, and the server's
//     helper processes that set them up: ip, nsenter, bwrap).
type costMeter struct {
	usageFile string // cpuacct.usage (ns) or cpu.stat (usage_usec)
	dir       string
	root      string // where the process goes back to
	err       error  // why the total is not measured
}

func newCostMeter(b *testing.B) *costMeter {
	m := &costMeter{}
	name := fmt.Sprintf("osb-bench-%d", os.Getpid())
	switch {
	case dirExists("/sys/fs/cgroup/cpuacct"):
		m.root = "/sys/fs/cgroup/cpuacct"
		m.dir = filepath.Join(m.root, name)
		m.usageFile = filepath.Join(m.dir, "cpuacct.usage")
	case fileExists("/sys/fs/cgroup/cgroup.controllers"):
		m.root = "/sys/fs/cgroup"
		m.dir = filepath.Join(m.root, name)
		m.usageFile = filepath.Join(m.dir, "cpu.stat")
	default:
		m.err = fmt.Errorf("no cpuacct (v1) or unified (v2) cgroup hierarchy at /sys/fs/cgroup")
		return m
	}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		m.err = err
		return m
	}
	if err := os.WriteFile(filepath.Join(m.dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		m.err = fmt.Errorf("moving the benchmark into %s: %w", m.dir, err)
		_ = os.Remove(m.dir)
		return m
	}
	b.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(m.root, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644)
		if err := os.Remove(m.dir); err != nil {
			b.Logf("cost meter: %s not removed (a process still in it?): %v", m.dir, err)
		}
	})
	return m
}

// snapshot is the tree's CPU so far and this process's own, in seconds.
func (m *costMeter) snapshot() (total, self float64, err error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, err
	}
	self = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
	if m.err != nil {
		return 0, self, m.err
	}
	b, err := os.ReadFile(m.usageFile)
	if err != nil {
		return 0, self, err
	}
	s := strings.TrimSpace(string(b))
	if strings.HasSuffix(m.usageFile, "cpu.stat") {
		for _, l := range strings.Split(s, "\n") {
			if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
				us, err := strconv.ParseFloat(v, 64)
				return us / 1e6, self, err
			}
		}
		return 0, self, fmt.Errorf("no usage_usec in %s", m.usageFile)
	}
	ns, err := strconv.ParseFloat(s, 64)
	return ns / 1e9, self, err
}

func tvSeconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// cost is one measured span: a grade call.
type cost struct {
	wall, total, self float64
	subCPU            float64 // the submissions' commands
	peakRSSKiB        int64   // the largest of them
	commands          int
	err               error // the total was not measured
}

func (c cost) sandboxes() float64 { return max(c.total-c.self-c.subCPU, 0) }

func (c cost) String() string {
	if c.err != nil {
		return fmt.Sprintf("wall %.1fs; grader+server %.1f CPU-s; submission %.1f CPU-s (peak RSS %d MiB, %d commands); sandboxes and total not measured: %v",
			c.wall, c.self, c.subCPU, c.peakRSSKiB/1024, c.commands, c.err)
	}
	return fmt.Sprintf("wall %.1fs; CPU-s: total %.1f = submission %.1f (%.0f%%, peak RSS %d MiB, %d commands) + sandboxes %.1f (%.0f%%) + grader+server %.1f (%.0f%%)",
		c.wall, c.total, c.subCPU, pctOf(c.subCPU, c.total), c.peakRSSKiB/1024, c.commands, c.sandboxes(), pctOf(c.sandboxes(), c.total), c.self, pctOf(c.self, c.total))
}

func pctOf(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * a / b
}

// measure runs f (a grade call) and measures its wall time, the tree's CPU
// and this process's own; the caller adds the submissions' (submissionCost).
func (m *costMeter) measure(f func()) cost {
	t0, s0, err0 := m.snapshot()
	start := time.Now()
	f()
	c := cost{wall: time.Since(start).Seconds()}
	t1, s1, err1 := m.snapshot()
	c.self = s1 - s0
	if c.err = err0; c.err == nil {
		c.err = err1
	}
	if c.err == nil {
		c.total = t1 - t0
	}
	return c
}

// submissionCost sums the commands' own CPU recorded in the bundles under
// dir (every evidence file with a subject runner "result").
func submissionCost(dir string) (cpu float64, peakKiB int64, commands int) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (d.Name() != "run.json" && d.Name() != "invocation.json") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		var rec struct {
			Result *struct {
				CPUSeconds float64 `json:"cpu_seconds"`
				PeakRSSKiB int64   `json:"peak_rss_kib"`
			} `json:"result"`
		}
		if json.Unmarshal(b, &rec) == nil && rec.Result != nil {
			cpu += rec.Result.CPUSeconds
			peakKiB = max(peakKiB, rec.Result.PeakRSSKiB)
			commands++
		}
		return nil
	})
	return cpu, peakKiB, commands
}

// bundleWall is a bundle's own wall time (report.json started → ended).
func bundleWall(bundle string) float64 {
	d, err := report.ReadDocument(bundle)
	if err != nil || d.EndedAt.IsZero() {
		return 0
	}
	return d.EndedAt.Sub(d.StartedAt).Seconds()
}

// profileTop starts a CPU profile of this process (the grader and the
// bundled server) and returns a function that stops it and logs its
// largest costs (go tool pprof -top), or why not.
func profileTop(b *testing.B, name string) func() {
	path := filepath.Join(os.TempDir(), name+".pprof")
	f, err := os.Create(path)
	if err != nil {
		b.Logf("CPU profile not taken: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Logf("CPU profile not taken: %v", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		for _, mode := range [][]string{{"-top", "-nodecount=5"}, {"-top", "-cum", "-nodecount=25"}} {
			var out bytes.Buffer
			cmd := exec.Command("go", append(append([]string{"tool", "pprof"}, mode...), path)...)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				b.Logf("go tool pprof %v %s: %v\n%s", mode, path, err, out.String())
				continue
			}
			b.Logf("grader-side CPU profile (%s; go tool pprof %s %s):\n%s", name, strings.Join(mode, " "), path, out.String())
		}
	}
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
