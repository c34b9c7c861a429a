package subject

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func confinedSpec(t *testing.T, cmd string) Spec {
	t.Helper()
	if why := confine.Available(); why != "" {
		t.Skip(why)
	}
	s := spec(t, cmd)
	require.NoError(t, os.WriteFile(s.Inputs.CSV, []byte("a,b\n1,2\n"), 0o644))
	s.Dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "tool.sh"), []byte("echo tool-ran\n"), 0o755))
	s.Confine = &Confinement{Config: confine.Config{StateDir: t.TempDir()}}
	return s
}

// The paths a confined command sees are the same whatever the host paths
// (no tells), its outputs are copied out, its status recorded.
func TestRunConfinedPathsAndCopyOut(t *testing.T) {
	s := confinedSpec(t, `printf '%s|%s|%s|%s|' {csv} {out} "$HOME" "$PWD" > {out}/paths.txt; cat {csv} >> {out}/paths.txt; sh tool.sh > {out}/report.md; ln -s /etc/passwd {out}/summary.json; id -u`)
	res := run(t, s)
	require.True(t, res.Succeeded(), "exit %d: %s", res.ExitCode, readFile(res.StderrPath))
	b, err := os.ReadFile(filepath.Join(s.Inputs.Out, "paths.txt"))
	require.NoError(t, err)
	want := confine.InsideCSV + "|" + confine.InsideOut + "|" + confine.InsideHome + "|" + confine.InsideRoot + "/" + filepath.Base(s.Dir) + "|a,b\n1,2\n"
	assert.Equal(t, want, string(b))
	r, _ := os.ReadFile(filepath.Join(s.Inputs.Out, "report.md"))
	assert.Equal(t, "tool-ran\n", string(r))
	_, err = os.Lstat(filepath.Join(s.Inputs.Out, "summary.json"))
	assert.True(t, os.IsNotExist(err), "a symlinked output is not kept")
	assert.Equal(t, []string{"chart.png", "summary.json"}, res.Missing)
	require.NotNil(t, res.Confinement)
	assert.Contains(t, []string{"confined", "partial"}, res.Confinement.Mode)
	assert.Equal(t, strings.TrimSpace(readFile(res.StdoutPath)), strconv.Itoa(res.Confinement.UID))
	assert.Contains(t, strings.Join(res.Confinement.Dropped, "\n"), "summary.json: a symbolic link")
	// A step reading the dropped file gets the reason, not "it does not exist".
	assert.Equal(t, "a symbolic link (never kept)", DroppedReason(filepath.Join(s.Inputs.Out, "summary.json")))
	assert.Empty(t, DroppedReason(filepath.Join(s.Inputs.Out, "chart.png")), "never written: nothing was dropped")
}

// A cancelled confined command gets SIGTERM and its grace (drills rely on
// the subject's own clean-up), then the box goes.
//
// The cancel comes once the command says its trap is set (stdout.log is
// written as the command writes), never after a fixed delay: under load the
// box's shell could start after a 700 ms timer, the SIGTERM then found no
// trap and report.md stayed empty (1 run in 3 with -race at load 22).
func TestRunConfinedCancelGivesGrace(t *testing.T) {
	s := confinedSpec(t, `trap 'echo cleaned > {out}/report.md; exit 3' TERM; echo trap-set; setsid sleep 300 & while :; do sleep 0.1; done`)
	s.Grace = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	set := make(chan bool, 1)
	go func() {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if strings.Contains(readFile(filepath.Join(s.WorkDir, "stdout.log")), "trap-set") {
				set <- true
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		set <- false
		cancel()
	}()
	res, err := Run(ctx, s)
	require.NoError(t, err)
	require.True(t, <-set, "the command said its trap was set within 2 minutes")
	assert.True(t, res.Canceled)
	r, _ := os.ReadFile(filepath.Join(s.Inputs.Out, "report.md"))
	assert.Equal(t, "cleaned\n", string(r), "the command ran its SIGTERM handler")
	assert.True(t, res.GroupGone)
}

func TestRunConfinedTimeout(t *testing.T) {
	s := confinedSpec(t, `sleep 300`)
	s.Timeout = 500 * time.Millisecond
	res := run(t, s)
	assert.True(t, res.TimedOut)
	assert.Less(t, res.Duration, 5*time.Second)
}

func readFile(p string) string { b, _ := os.ReadFile(p); return string(b) }

// A command that runs {acceptance} from a script (not named in the
// template) is still seen running it.
func TestRunConfinedSeesTheReferenceRun(t *testing.T) {
	s := confinedSpec(t, `sh run.sh`)
	self, err := os.Executable()
	require.NoError(t, err)
	s.Executable = self
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "run.sh"), []byte("A=/capstone/bin/accept; \"${A}ance\" -test.run '^TestSleepHelper$' >/dev/null 2>&1\n"), 0o755))
	res := run(t, s)
	assert.False(t, s.Template.RunsReference(), "the template does not name it")
	assert.True(t, res.RanReference, "the box saw {acceptance} run")

	s2 := confinedSpec(t, `sleep 0.5`)
	s2.Executable = self
	assert.False(t, run(t, s2).RanReference)
}

// TestSleepHelper is what TestRunConfinedSeesTheReferenceRun runs as {acceptance}.
func TestSleepHelper(t *testing.T) { time.Sleep(600 * time.Millisecond) }

// The dropped list is bounded: a file past it is said to be maybe dropped,
// never "not written".
func TestDroppedReasonPastTheBoundedList(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	require.NoError(t, writeDropped(out, []string{"a.lnk: a symbolic link (never kept)"}, 1))
	assert.Equal(t, "a symbolic link (never kept)", DroppedReason(filepath.Join(out, "a.lnk")))
	assert.Empty(t, DroppedReason(filepath.Join(out, "summary.json")), "the whole list: nothing else was dropped")
	require.NoError(t, writeDropped(out, []string{"a.lnk: a symbolic link (never kept)"}, 5000))
	assert.Equal(t, "a symbolic link (never kept)", DroppedReason(filepath.Join(out, "a.lnk")))
	assert.Contains(t, DroppedReason(filepath.Join(out, "summary.json")), "maybe not copied out: the box dropped 5000 entries")
}
