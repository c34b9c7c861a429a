package subject

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/harness/confine"
)

// Confinement asks Run to run the command in a box of its own
// (harness/confine): its own uid and namespaces, the host read-only, a
// private copy of Spec.Dir, a cgroup, a network that reaches only the ports
// Allow names. Inside, {csv} is confine.InsideCSV, {out} confine.InsideOut,
// {acceptance} confine.InsideAcceptance and $HOME confine.InsideHome, the
// same in every scenario; {out} is copied into Inputs.Out after the command
// and everything it started are gone.
type Confinement struct {
	Config confine.Config
	// Allow says whether a connection to 127.0.0.1:port on the host is the
	// command's to make (its target, its sandboxes, its model, the stubs).
	Allow func(port int) bool
	// Check: see confine.Request.Check (Allow, with why the grader could
	// not tell when its look-up failed); asked instead of Allow when set.
	Check func(port int) (ok bool, unsure string)
	// Guard: see confine.Request.Guard (the bundled server's admin API).
	Guard func(port int) func(*http.Request) string
	// Owns: see confine.Request.Owns (sandbox routes of other submissions).
	Owns func(sandboxID string) (bool, error)
	// ShowSiblings binds Spec.Dir's parent read-only (commands with ../ paths).
	ShowSiblings bool
	// ReadOnly are host directories visible read-only at the same path.
	ReadOnly []string
}

// runConfined is Run for a Spec with Confine set.
func runConfined(ctx context.Context, spec Spec, grace time.Duration, limit int64) (*Result, error) {
	in := spec.Inputs
	hostOut := in.Out
	files := map[string]string{}
	exe := in.Acceptance
	if exe == "" {
		exe = spec.Executable
	}
	if exe != "" {
		files[confine.InsideAcceptance] = exe
	}
	copies := map[string]string{}
	if in.CSV != "" {
		// Copied in, not bound: its host path names the scenario.
		copies[confine.InsideCSV] = in.CSV
	}
	if err := os.MkdirAll(spec.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("subject: work dir: %w", err)
	}
	if err := prepareOut(hostOut); err != nil {
		return nil, err
	}
	dir := spec.Dir // "" (a bare command): an empty directory of its own
	box, err := confine.Open(spec.Confine.Config, confine.Request{
		Name: filepath.Base(spec.WorkDir), SubmissionDir: dir, ShowSiblings: spec.Confine.ShowSiblings,
		Files: files, Copies: copies, ReadOnly: spec.Confine.ReadOnly, Allow: spec.Confine.Allow, Check: spec.Confine.Check, Guard: spec.Confine.Guard, Owns: spec.Confine.Owns,
	})
	if err != nil {
		return nil, fmt.Errorf("subject: confinement: %w", err)
	}
	defer box.Close()
	// What the command sees: the same paths in every scenario in a full
	// box, the box's own directories at the uid level (box.Path).
	in.Out, in.Acceptance = box.Path(confine.InsideOut), box.Path(confine.InsideAcceptance)
	if in.CSV != "" {
		in.CSV = box.Path(confine.InsideCSV)
	}
	argv, err := spec.Template.Argv(in.Acceptance, in)
	if err != nil {
		return nil, err
	}
	home := box.Path(confine.InsideHome)
	res := &Result{
		Argv:         argv,
		ExitCode:     -1,
		StdoutPath:   filepath.Join(spec.WorkDir, "stdout.log"),
		StderrPath:   filepath.Join(spec.WorkDir, "stderr.log"),
		OutDir:       hostOut,
		HomeDir:      home,
		RanReference: spec.Template.RunsReference(),
	}
	lg, err := openLogs(res, limit)
	if err != nil {
		return nil, err
	}
	cmd := box.Command(argv, spec.Env.List(home), box.WorkDir())
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = lg.outW, lg.errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	startErr := cmd.Start()
	lg.started(startErr)
	if startErr != nil {
		return nil, fmt.Errorf("subject: start the box: %w", startErr)
	}
	leader := cmd.Process.Pid // bwrap outside the box: its end ends the box's pid namespace
	// Did it run the bundled reference, however it invoked {acceptance}?
	stopWatch := make(chan struct{})
	ranRef := box.WatchExe(exe, 200*time.Millisecond, stopWatch)
	waitCh := make(chan error, 1)
	go func() { waitCh <- cmd.Wait() }()
	timer := time.NewTimer(spec.Timeout)
	defer timer.Stop()
	// stop: SIGTERM to the command and its group (never to bwrap, whose end
	// would end them at once), grace, then the whole box.
	stop := func(hard bool) {
		if !hard {
			for _, p := range groupMembers(leader) {
				// bwrap (a full box's leader) is never signalled; at the uid
				// level the leader is the command itself.
				if p != leader || box.Level() == confine.LevelUID {
					_ = syscall.Kill(p, syscall.SIGTERM)
				}
			}
			select {
			case <-waitCh:
				return
			case <-time.After(grace):
			}
		}
		box.Kill()
		_ = syscall.Kill(-leader, syscall.SIGKILL)
		<-waitCh
	}
	select {
	case <-waitCh:
	case <-timer.C:
		res.TimedOut = true
		stop(false)
	case <-ctx.Done():
		res.Canceled = true
		stop(spec.KillOnCancel)
	}
	res.Duration = time.Since(start)
	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
		}
		res.CPUSeconds = (ps.UserTime() + ps.SystemTime()).Seconds() // rusage; the box's cgroup counts all: Confinement.Usage
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			res.PeakRSSKiB = ru.Maxrss
		}
	}
	close(stopWatch)
	if <-ranRef {
		res.RanReference = true
	}
	// Whatever is left of the box (nothing outlives bwrap's pid 1, but a
	// process may be between fork and exit) goes with its cgroup.
	res.Leftover = groupMembers(leader)
	box.Kill()
	lg.finish(res)
	copyErr := box.CopyOut(hostOut)
	box.Close()
	res.Confinement = box.Status()
	res.GroupGone = res.Confinement.Survivors == 0
	if err := lg.failed(); err != nil {
		return res, err
	}
	if copyErr != nil {
		return res, fmt.Errorf("subject: copying {out} out of the box: %w", copyErr)
	}
	if err := writeDropped(res.OutDir, res.Confinement.Dropped, res.Confinement.DroppedCount); err != nil {
		return res, err
	}
	res.Defused = defuseOutputs(res.OutDir)
	res.Missing, res.Empty = CheckOutputs(res.OutDir)
	return res, nil
}

// droppedSuffix names the file beside {out} that says which of its files
// the box kept back, and why (a step reading one names the reason, not
// "it wrote no file").
const droppedSuffix = ".dropped.json"

// droppedRest is the record's key for the entries the bounded list left out
// (no entry of {out} has an empty name).
const droppedRest = ""

func writeDropped(outDir string, dropped []string, count int) error {
	if len(dropped) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, d := range dropped {
		if rel, why, ok := strings.Cut(d, ": "); ok {
			m[rel] = why
		}
	}
	if count > len(dropped) {
		m[droppedRest] = fmt.Sprintf("maybe not copied out: the box dropped %d entries of {out} (over its caps; the first %d are listed in the command's record)", count, len(dropped))
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Clean(outDir)+droppedSuffix, b, 0o644)
}

// DroppedReason says why the file at path, in a confined command's {out},
// was not copied out of the box ("" when it was not dropped, or the command
// was not confined).
func DroppedReason(path string) string {
	p := filepath.Clean(path)
	dir := filepath.Dir(p)
	for i := 0; i <= confine.MaxOutDepth && dir != "/" && dir != "."; i, dir = i+1, filepath.Dir(dir) {
		b, err := os.ReadFile(dir + droppedSuffix)
		if err != nil {
			continue
		}
		var m map[string]string
		if json.Unmarshal(b, &m) != nil {
			return ""
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return ""
		}
		if why := m[filepath.ToSlash(rel)]; why != "" {
			return why // the nearest record is the command's own
		}
		return m[droppedRest]

	}
	return ""
}
