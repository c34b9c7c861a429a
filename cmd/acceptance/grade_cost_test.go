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
//   - the submission: its commands' CPU and peak memory. A confined
//     command's come from its box's cgroup, read when the box ended
//     (result.confinement.usage: every process of the box, waited for or
//     not). A box's group is not below the benchmark's, so its CPU is added
//     to the total. An unconfined command's come from its rusage
//     (result.cpu_seconds, result.peak_rss_kib: the command and the
//     descendants it waited for), already inside the benchmark's group;
//   - the sandboxes: the rest of the benchmark's group (the sandboxes'
//     processes, and the server's helper processes that set them up: ip,
//     nsenter, bwrap).
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
	wall float64
	// group: the benchmark's cgroup (this process, the sandboxes, the
	// unconfined commands); self: this process's own.
	group, self float64
	sub         subCost
	err         error // the group's CPU (and so the total) was not measured
}

// total is everything the grade cost: the benchmark's group and the boxes'.
func (c cost) total() float64 { return c.group + c.sub.cgroupCPU }

// subCPU is the submissions' commands' CPU: their boxes' and the
// unconfined ones' rusage.
func (c cost) subCPU() float64 { return c.sub.cgroupCPU + c.sub.rusageCPU }

func (c cost) sandboxes() float64 { return max(c.group-c.self-c.sub.rusageCPU, 0) }

func (c cost) String() string {
	if c.err != nil {
		return fmt.Sprintf("wall %.1fs; grader+server %.1f CPU-s; submission %s; sandboxes and total not measured: %v",
			c.wall, c.self, c.sub, c.err)
	}
	t := c.total()
	return fmt.Sprintf("wall %.1fs; CPU-s: total %.1f = submission %.1f (%.0f%%; %s) + sandboxes %.1f (%.0f%%) + grader+server %.1f (%.0f%%)",
		c.wall, t, c.subCPU(), pctOf(c.subCPU(), t), c.sub, c.sandboxes(), pctOf(c.sandboxes(), t), c.self, pctOf(c.self, t))
}

func pctOf(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * a / b
}

// measure runs f (a grade call) and measures its wall time, the tree's CPU
// and this process's own; the caller adds the submissions' (submissionCost).
// measure runs f (a grade call, writing its bundles under out) and
// measures its wall time, the benchmark group's CPU, this process's own
// and the submissions' commands' (submissionCost of out).
func (m *costMeter) measure(out *string, f func()) cost {
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
		c.group = t1 - t0
	}
	c.sub = submissionCost(*out)
	return c
}

// subCost is what the submissions' commands cost, from their evidence.
type subCost struct {
	cgroupCPU      float64 // confined commands: their boxes' cgroups
	cgroupPeakKiB  int64   // the largest box's peak memory
	cgroupCommands int
	rusageCPU      float64 // commands without a cgroup figure: their rusage
	rusagePeakKiB  int64   // the largest peak RSS among them
	rusageCommands int
	// leaderCPU: the confined commands' own rusage (the box's leader and what
	// it waited for), beside their cgroup figure, to show what it misses.
	leaderCPU float64
}

func (s subCost) commands() int { return s.cgroupCommands + s.rusageCommands }

func (s subCost) String() string {
	out := fmt.Sprintf("%d commands", s.commands())
	if s.cgroupCommands > 0 {
		out += fmt.Sprintf("; %d confined: cgroup %.1f CPU-s, peak %d MiB (their rusage said %.1f)",
			s.cgroupCommands, s.cgroupCPU, s.cgroupPeakKiB/1024, s.leaderCPU)
	}
	if s.rusageCommands > 0 {
		out += fmt.Sprintf("; %d by rusage: %.1f CPU-s, peak RSS %d MiB", s.rusageCommands, s.rusageCPU, s.rusagePeakKiB/1024)
	}
	return out
}

// submissionCost sums the commands' cost recorded in the bundles under dir
// (every evidence file with a subject runner "result"): a confined command's
// box usage (result.confinement.usage), else its rusage.
func submissionCost(dir string) subCost {
	var s subCost
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
				CPUSeconds  float64 `json:"cpu_seconds"`
				PeakRSSKiB  int64   `json:"peak_rss_kib"`
				Confinement *struct {
					Usage *struct {
						CPUSeconds      float64  `json:"cpu_seconds"`
						PeakMemoryBytes int64    `json:"peak_memory_bytes"`
						Missing         []string `json:"missing"`
					} `json:"usage"`
				} `json:"confinement"`
			} `json:"result"`
		}
		if json.Unmarshal(b, &rec) != nil || rec.Result == nil {
			return nil
		}
		r := rec.Result
		if r.Confinement != nil && r.Confinement.Usage != nil && !missing(r.Confinement.Usage.Missing, "cpu:") {
			u := r.Confinement.Usage
			s.cgroupCPU += u.CPUSeconds
			if missing(u.Missing, "peak memory:") {
				s.cgroupPeakKiB = max(s.cgroupPeakKiB, r.PeakRSSKiB)
			} else {
				s.cgroupPeakKiB = max(s.cgroupPeakKiB, u.PeakMemoryBytes/1024)
			}
			s.leaderCPU += r.CPUSeconds
			s.cgroupCommands++
			return nil
		}
		s.rusageCPU += r.CPUSeconds
		s.rusagePeakKiB = max(s.rusagePeakKiB, r.PeakRSSKiB)
		s.rusageCommands++
		return nil
	})
	return s
}

// benchSubmissionTimeout is the grading benchmarks' --submission-timeout.
// They measure what a whole grade costs: on a loaded machine the default
// (15 minutes of command time per submission) ran out for the reference at
// load 15-20 on 2 cores (its test commands never started), which would cut
// the grade short and change its verdict.
const benchSubmissionTimeout = "60m"

// benchLog logs to the benchmark and, at once, to stderr: a benchmark's
// log is printed only when it ends, and these run for tens of minutes.
func benchLog(b testing.TB, format string, args ...any) {
	b.Helper()
	b.Logf(format, args...)
	fmt.Fprintf(os.Stderr, "%s %s: %s\n", time.Now().UTC().Format("15:04:05"), b.Name(), fmt.Sprintf(format, args...))
}

// missing says whether a usage's Missing names the figure (its prefix).
func missing(list []string, prefix string) bool {
	for _, m := range list {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}

// loadAvg is the machine's load average now ("1-min 5-min 15-min"), for
// every figure a benchmark logs.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
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
