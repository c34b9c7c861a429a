package subject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/harness/confine"
)

// Expected output files in {out}.
var ExpectedOutputs = []string{"report.md", "chart.png", "summary.json"}

// Defaults used when a Spec leaves them zero.
const (
	DefaultGrace          = 5 * time.Second
	DefaultMaxOutputBytes = 16 << 20 // per stream, on disk
)

// Spec describes one subject run.
type Spec struct {
	Template Template
	Inputs   Inputs
	Env      Env
	// Executable is the harness binary, used for the reference subject.
	Executable string
	// WorkDir receives stdout.log, stderr.log and the subject's fresh HOME
	// (home-*). Required; it is created if missing.
	WorkDir string
	// Dir is the subject's working directory; empty means WorkDir.
	Dir string
	// Timeout is the wall-clock limit. Required (> 0).
	Timeout time.Duration
	// Grace is the delay between SIGTERM and SIGKILL. Zero means DefaultGrace.
	Grace time.Duration
	// KillOnCancel: when ctx ends the run, the group gets SIGKILL at once, no
	// SIGTERM first (drill D5: a crash leaves no chance to run a finally).
	KillOnCancel bool
	// MaxOutputBytes caps each of stdout/stderr on disk. Zero means
	// DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// Confine runs the command in a box of its own (harness/confine); nil
	// runs it as a plain process group, and Unconfined says why (it goes in
	// Result.Confinement).
	Confine    *Confinement
	Unconfined string
}

// Result is what happened. A subject that crashed, exited non-zero or timed
// out is a Result, not an error; Run returns an error only when the harness
// itself could not run the subject.
type Result struct {
	Argv     []string `json:"argv"`
	ExitCode int      `json:"exit_code"` // -1 when killed by a signal
	Signal   string   `json:"signal,omitempty"`
	TimedOut bool     `json:"timed_out"`
	// NotStarted: the command never started (the submission's command time
	// was spent before it); the result is a stand-in, with no confinement.
	NotStarted bool `json:"not_started,omitempty"`
	// Canceled is set when the caller's context ended the run.
	Canceled bool          `json:"canceled"`
	Duration time.Duration `json:"duration"`
	// CPUSeconds and PeakRSSKiB are the command's own cost: user+system CPU
	// of its process and the descendants it waited for, and the largest
	// resident set among them (child rusage; the sandboxes' cost is the
	// server's, not in here). A confined command's whole cost, every process
	// of its box waited for or not, is its box's cgroup's:
	// Confinement.Usage.
	CPUSeconds float64 `json:"cpu_seconds"`
	PeakRSSKiB int64   `json:"peak_rss_kib"`

	StdoutPath      string `json:"stdout_path"`
	StderrPath      string `json:"stderr_path"`
	StdoutBytes     int64  `json:"stdout_bytes"` // produced, including any beyond the cap
	StderrBytes     int64  `json:"stderr_bytes"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`

	OutDir  string   `json:"out_dir"`
	Missing []string `json:"missing"` // of ExpectedOutputs, absent (or not a regular file)
	Empty   []string `json:"empty"`   // of ExpectedOutputs, present but zero bytes
	HomeDir string   `json:"home_dir"`
	// Leftover lists pids still in the subject's process group after the
	// subject exited (or was killed); they were terminated by the harness.
	Leftover []int `json:"leftover,omitempty"`
	// GroupGone is true when no live process of the group remained at the end.
	GroupGone bool `json:"group_gone"`
	// Defused lists the entries of OutDir that were no file to read and were
	// removed after the run ("summary.json: fifo"): FIFOs, sockets, devices and
	// symbolic links that do not lead to a regular file. Every later reader
	// (the summary, the report, the chart, the output scan) would have blocked
	// on a FIFO, or read /dev/zero without end.
	Defused []string `json:"defused,omitempty"`
	// Escaped lists descendants that had left the process group (setsid) and
	// were still running after the subject; they were terminated by the
	// harness (found by the run's own HOME in their environment).
	Escaped []int `json:"escaped,omitempty"`
	// Confinement is what the command's box enforced and what it could not
	// (mode "off" for a command run unconfined).
	Confinement *confine.Status `json:"confinement,omitempty"`
	// RanReference: the command runs the bundled reference ({acceptance}
	// reference), shown in the report's provenance.
	RanReference bool `json:"ran_reference,omitempty"`
}

// Succeeded reports exit code 0 within the time limit.
func (r *Result) Succeeded() bool {
	return r != nil && r.ExitCode == 0 && !r.TimedOut && !r.Canceled
}

// Run runs the subject and waits for it (and its process group) to finish.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	if spec.Timeout <= 0 {
		return nil, errors.New("subject: Timeout must be > 0")
	}
	if spec.WorkDir == "" {
		return nil, errors.New("subject: WorkDir is required")
	}
	if spec.Inputs.Out == "" {
		return nil, errors.New("subject: Inputs.Out is required")
	}
	grace := spec.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	limit := spec.MaxOutputBytes
	if limit <= 0 {
		limit = DefaultMaxOutputBytes
	}
	if spec.Confine != nil {
		return runConfined(ctx, spec, grace, limit)
	}
	argv, err := spec.Template.Argv(spec.Executable, spec.Inputs)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("subject: work dir: %w", err)
	}
	if err := prepareOut(spec.Inputs.Out); err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp(spec.WorkDir, "home-")
	if err != nil {
		return nil, fmt.Errorf("subject: home dir: %w", err)
	}
	res := &Result{
		Argv:       argv,
		ExitCode:   -1,
		StdoutPath: filepath.Join(spec.WorkDir, "stdout.log"),
		StderrPath: filepath.Join(spec.WorkDir, "stderr.log"),
		OutDir:     spec.Inputs.Out,
		HomeDir:    home,

		RanReference: spec.Template.RunsReference(),
		Confinement:  confine.Off(spec.Unconfined),
	}
	lg, err := openLogs(res, limit)
	if err != nil {
		return nil, err
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = spec.Env.List(home)
	cmd.Dir = spec.Dir
	if cmd.Dir == "" {
		cmd.Dir = spec.WorkDir
	}
	cmd.Stdin = nil // /dev/null
	cmd.Stdout, cmd.Stderr = lg.outW, lg.errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	start := time.Now()
	startErr := cmd.Start()
	lg.started(startErr)
	if startErr != nil {
		return nil, fmt.Errorf("subject: start %q: %w", argv[0], startErr)
	}
	pgid := cmd.Process.Pid

	waitCh := make(chan error, 1)
	go func() { waitCh <- cmd.Wait() }()
	timer := time.NewTimer(spec.Timeout)
	defer timer.Stop()

	select {
	case <-waitCh:
	case <-timer.C:
		res.TimedOut = true
		stopLeader(pgid, grace, waitCh)
	case <-ctx.Done():
		res.Canceled = true
		if spec.KillOnCancel {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		stopLeader(pgid, grace, waitCh)
	}
	res.Duration = time.Since(start)
	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
		}
		res.CPUSeconds = (ps.UserTime() + ps.SystemTime()).Seconds()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			res.PeakRSSKiB = ru.Maxrss // kilobytes on Linux
		}
	}

	// Anything left in the group (background jobs, grandchildren) goes too.
	if left := groupMembers(pgid); len(left) > 0 {
		res.Leftover = left
		if res.TimedOut || res.Canceled {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			waitGroupGone(pgid, 2*time.Second)
		} else {
			killGroup(pgid, grace)
		}
	}
	res.GroupGone = len(groupMembers(pgid)) == 0
	// Descendants that left the group (setsid) carry the run's own HOME: they
	// go too, or they would outlive the run (and may hold the pipes).
	res.Escaped = killEscapees("HOME="+home, pgid, grace, res.TimedOut || res.Canceled)

	lg.finish(res) // a process that left the group may hold the pipes: not waited for past 2 s
	if err := lg.failed(); err != nil {
		return res, err
	}
	res.Defused = defuseOutputs(res.OutDir)
	res.Missing, res.Empty = CheckOutputs(res.OutDir)
	return res, nil
}

// stopLeader terminates the group after a timeout or cancellation and waits
// for the leader to be reaped.
func stopLeader(pgid int, grace time.Duration, waitCh <-chan error) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-waitCh:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-waitCh
}

// prepareOut creates the output directory, or checks that it is empty, so
// stale files are never mistaken for outputs of this run.
func prepareOut(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("subject: out dir: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("subject: out dir: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("subject: out dir %s is not empty", dir)
	}
	return nil
}

// CheckOutputs reports which expected outputs are missing (absent or not a
// regular file) and which are present but empty.
func CheckOutputs(dir string) (missing, empty []string) {
	missing, empty = []string{}, []string{}
	for _, name := range ExpectedOutputs {
		fi, err := os.Lstat(filepath.Join(dir, name))
		switch {
		case err != nil || !fi.Mode().IsRegular():
			missing = append(missing, name)
		case fi.Size() == 0:
			empty = append(empty, name)
		}
	}
	return missing, empty
}

func closedChan() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
