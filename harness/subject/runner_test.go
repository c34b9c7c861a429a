package subject

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func spec(t *testing.T, cmd string) Spec {
	t.Helper()
	dir := t.TempDir()
	return Spec{
		Template: MustParse(cmd),
		Inputs: Inputs{
			CSV: filepath.Join(dir, "in put.csv"), CSVURL: "http://127.0.0.1:9/data/in.csv",
			Question: "What is the total revenue?", Out: filepath.Join(dir, "out"),
		},
		Env: Env{
			Domain: "127.0.0.1:8080", APIKey: "key-123", DataAPIURL: "http://data-api.capstone.test/v1/x",
			DataAPIToken: "tok-456", RunID: "run-789",
		},
		WorkDir: filepath.Join(dir, "work"),
		Timeout: 20 * time.Second,
		Grace:   300 * time.Millisecond,
	}
}

func run(t *testing.T, s Spec) *Result {
	t.Helper()
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	return res
}

func TestHostileInputsReachSubjectVerbatim(t *testing.T) {
	for _, v := range hostile {
		s := spec(t, `printf '%s' {question} > {out}/q.txt; printf '%s' {csv} > {out}/c.txt`)
		s.Inputs.Question = v
		s.Inputs.CSV = filepath.Join(filepath.Dir(s.Inputs.CSV), "x"+strings.ReplaceAll(v, "/", "_")+".csv")
		res := run(t, s)
		require.True(t, res.Succeeded(), "value %q: exit %d", v, res.ExitCode)
		q, err := os.ReadFile(filepath.Join(s.Inputs.Out, "q.txt"))
		require.NoError(t, err)
		assert.Equal(t, v, string(q))
		c, err := os.ReadFile(filepath.Join(s.Inputs.Out, "c.txt"))
		require.NoError(t, err)
		assert.Equal(t, s.Inputs.CSV, string(c))
		for _, d := range []string{s.WorkDir, s.Inputs.Out, res.HomeDir} {
			_, err := os.Stat(filepath.Join(d, "MARKER"))
			assert.True(t, os.IsNotExist(err), "injection ran for %q", v)
		}
	}
}

func TestEnvironmentIsExactlyTheContract(t *testing.T) {
	t.Setenv("OSB_TEST_CANARY_SECRET", "canary-5f1e0c")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "canary-aws")
	s := spec(t, `cat /proc/$$/environ > {out}/env.bin`)
	res := run(t, s)
	require.True(t, res.Succeeded())
	raw, err := os.ReadFile(filepath.Join(s.Inputs.Out, "env.bin"))
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "canary-")
	env := map[string]string{}
	for _, kv := range bytes.Split(bytes.TrimRight(raw, "\x00"), []byte{0}) {
		k, v, _ := strings.Cut(string(kv), "=")
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assert.Equal(t, []string{"CAPSTONE_DATA_API_TOKEN", "CAPSTONE_DATA_API_URL", "CAPSTONE_RUN_ID", "HOME", "LANG",
		"OPEN_SANDBOX_API_KEY", "OPEN_SANDBOX_DOMAIN", "PATH"}, keys)
	assert.Equal(t, "127.0.0.1:8080", env["OPEN_SANDBOX_DOMAIN"])
	assert.Equal(t, "key-123", env["OPEN_SANDBOX_API_KEY"])
	assert.Equal(t, "tok-456", env["CAPSTONE_DATA_API_TOKEN"])
	assert.Equal(t, "run-789", env["CAPSTONE_RUN_ID"])
	assert.Equal(t, res.HomeDir, env["HOME"])
	assert.DirExists(t, env["HOME"])
	assert.NotEqual(t, os.Getenv("HOME"), env["HOME"])
}

func TestTimeoutKillsWholeGroupIncludingGrandchild(t *testing.T) {
	// The grandchild ignores SIGTERM, so only the SIGKILL escalation can end it.
	s := spec(t, `(trap '' TERM; exec sleep 300) & echo $! > {out}/gc.pid; sleep 300`)
	s.Timeout = 500 * time.Millisecond
	res := run(t, s)
	assert.True(t, res.TimedOut)
	assert.False(t, res.Succeeded(), "a timeout is never a pass")
	assert.NotEqual(t, 0, res.ExitCode)
	b, err := os.ReadFile(filepath.Join(s.Inputs.Out, "gc.pid"))
	require.NoError(t, err)
	gc, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	assert.True(t, processGone(gc), "grandchild %d still alive", gc)
	assert.True(t, res.GroupGone)
	assert.Contains(t, res.Leftover, gc, "the grandchild outlived SIGTERM and was killed afterwards")
}

func TestBackgroundLeftoversAreKilledAfterNormalExit(t *testing.T) {
	s := spec(t, `sleep 300 & echo $! > {out}/bg.pid; echo done`)
	res := run(t, s)
	assert.True(t, res.Succeeded())
	b, err := os.ReadFile(filepath.Join(s.Inputs.Out, "bg.pid"))
	require.NoError(t, err)
	bg, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	assert.Contains(t, res.Leftover, bg)
	assert.True(t, processGone(bg))
	assert.True(t, res.GroupGone)
	out, _ := os.ReadFile(res.StdoutPath)
	assert.Equal(t, "done\n", string(out))
}

// A descendant that left the subject's process group (setsid: a daemonised
// helper) is found by the run's own HOME and ended too; it once outlived the
// run.
func TestEscapedDescendantIsKilled(t *testing.T) {
	for _, timedOut := range []bool{false, true} {
		s := spec(t, `setsid sh -c 'echo $$ > "$HOME/esc.pid"; trap "" TERM; exec sleep 300' & sleep 0.3; [ -s "$HOME/esc.pid" ] && echo started`)
		if timedOut {
			s.Template = spec(t, `setsid sh -c 'echo $$ > "$HOME/esc.pid"; exec sleep 300' & sleep 300`).Template
			s.Timeout = time.Second
		}
		res := run(t, s)
		b, err := os.ReadFile(filepath.Join(res.HomeDir, "esc.pid"))
		require.NoError(t, err)
		esc, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		assert.Equal(t, timedOut, res.TimedOut)
		assert.True(t, processGone(esc), "the escaped process %d outlived the run (timed out: %v)", esc, timedOut)
		assert.Contains(t, res.Escaped, esc)
		assert.NotContains(t, res.Leftover, esc, "it had left the group")
	}
}

// Outputs no reader may open are removed once the subject is gone: a FIFO
// summary.json once hung the whole grading run (deaf to SIGTERM), a link to
// /dev/zero would be read without end. Regular files, directories and links
// to regular files stay.
func TestOutputsThatCannotBeReadAreDefused(t *testing.T) {
	s := spec(t, `cd {out} && mkfifo summary.json && ln -s /dev/zero report.md && echo png > real.png && ln -s real.png chart.png && mkdir -p sub && mkfifo sub/deep && ln -s /nonexistent dangling && python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")'`)
	res := run(t, s)
	require.True(t, res.Succeeded(), "%+v", res)
	assert.Equal(t, []string{"dangling: symbolic link to no regular file", "report.md: symbolic link to no regular file",
		"sock: socket", "sub/deep: fifo", "summary.json: fifo"}, res.Defused)
	assert.Equal(t, []string{"report.md", "chart.png", "summary.json"}, res.Missing, "a link is no output file (CheckOutputs)")
	b, err := os.ReadFile(filepath.Join(s.Inputs.Out, "chart.png"))
	require.NoError(t, err, "a link to a regular file stays")
	assert.Equal(t, "png\n", string(b))
	assert.DirExists(t, filepath.Join(s.Inputs.Out, "sub"))
}

func TestMissingAndEmptyOutputs(t *testing.T) {
	s := spec(t, `echo '# Report' > {out}/report.md; : > {out}/summary.json`)
	res := run(t, s)
	assert.True(t, res.Succeeded())
	assert.Equal(t, []string{"chart.png"}, res.Missing)
	assert.Equal(t, []string{"summary.json"}, res.Empty)

	s = spec(t, `ln -s /etc/hostname {out}/report.md; mkdir {out}/chart.png; echo '{}' > {out}/summary.json`)
	res = run(t, s)
	assert.Equal(t, []string{"report.md", "chart.png"}, res.Missing, "symlinks and directories are not outputs")
	assert.Empty(t, res.Empty)
}

func TestCrashingSubject(t *testing.T) {
	s := spec(t, `echo 'Traceback: boom' >&2; exit 3`)
	res := run(t, s)
	assert.Equal(t, 3, res.ExitCode)
	assert.False(t, res.Succeeded())
	assert.False(t, res.TimedOut)
	errOut, _ := os.ReadFile(res.StderrPath)
	assert.Equal(t, "Traceback: boom\n", string(errOut))
	assert.ElementsMatch(t, ExpectedOutputs, res.Missing)

	s = spec(t, `kill -SEGV $$`)
	res = run(t, s)
	assert.Equal(t, -1, res.ExitCode)
	assert.Equal(t, syscall.SIGSEGV.String(), res.Signal)
	assert.False(t, res.Succeeded())

	s = spec(t, `/nonexistent/program {csv}`)
	res = run(t, s)
	assert.Equal(t, 127, res.ExitCode)
}

func TestOutputIsCappedOnDisk(t *testing.T) {
	s := spec(t, `head -c 300000 /dev/zero; head -c 10 /dev/zero >&2`)
	s.MaxOutputBytes = 1000
	res := run(t, s)
	require.True(t, res.Succeeded())
	assert.EqualValues(t, 300000, res.StdoutBytes)
	assert.True(t, res.StdoutTruncated)
	fi, err := os.Stat(res.StdoutPath)
	require.NoError(t, err)
	assert.EqualValues(t, 1000, fi.Size())
	assert.EqualValues(t, 10, res.StderrBytes)
	assert.False(t, res.StderrTruncated)
}

func TestReferenceSubjectRunsExecutableWithArgs(t *testing.T) {
	s := spec(t, "reference")
	exe := filepath.Join(t.TempDir(), "fake-acceptance")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"), 0o755))
	s.Executable = exe
	s.Inputs.Question = "rev by 'region'? $(id)"
	res := run(t, s)
	require.True(t, res.Succeeded())
	out, _ := os.ReadFile(res.StdoutPath)
	assert.Equal(t, strings.Join([]string{"reference", "--csv", s.Inputs.CSV, "--question", s.Inputs.Question, "--out", s.Inputs.Out}, "\n")+"\n", string(out))
}

func TestContextCancelStopsSubject(t *testing.T) {
	s := spec(t, `sleep 300`)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	res, err := Run(ctx, s)
	require.NoError(t, err)
	assert.True(t, res.Canceled)
	assert.False(t, res.Succeeded())
	assert.True(t, res.GroupGone)
}

func TestSpecValidation(t *testing.T) {
	s := spec(t, "true")
	s.Timeout = 0
	_, err := Run(context.Background(), s)
	assert.Error(t, err)

	s = spec(t, "true")
	require.NoError(t, os.MkdirAll(s.Inputs.Out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(s.Inputs.Out, "report.md"), []byte("stale"), 0o644))
	_, err = Run(context.Background(), s)
	assert.ErrorContains(t, err, "not empty")
}

// KillOnCancel: a cancelled run is SIGKILLed at once; a TERM trap (a
// "finally") never runs. Without it the trap runs.
func TestKillOnCancelSkipsTheFinally(t *testing.T) {
	for _, hard := range []bool{false, true} {
		s := spec(t, `trap 'touch {out}/finally; exit 1' TERM; echo started > {out}/started; while :; do sleep 0.05; done`)
		s.KillOnCancel = hard
		s.Grace = 2 * time.Second
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for i := 0; i < 200; i++ {
				if _, err := os.Stat(filepath.Join(s.Inputs.Out, "started")); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
		}()
		res, err := Run(ctx, s)
		require.NoError(t, err)
		assert.True(t, res.Canceled)
		_, ferr := os.Stat(filepath.Join(s.Inputs.Out, "finally"))
		assert.Equal(t, !hard, ferr == nil, "KillOnCancel=%v: the TERM trap ran=%v", hard, ferr == nil)
	}
}
