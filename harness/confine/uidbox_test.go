package confine

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needUIDBoxes: a state directory other uids can traverse to (t.TempDir's
// parent is 0700).
func needUIDBoxes(t *testing.T) Config {
	t.Helper()
	cfg := needLevel(t, LevelUID)
	require.NoError(t, os.Chmod(filepath.Dir(cfg.StateDir), 0o711))
	return cfg
}

// runUID runs script in a fresh uid-level box: its home and {out} are host
// directories of the box's.
func runUID(t *testing.T, cfg Config, req Request, script string) ran {
	t.Helper()
	return runIn(t, cfg, req, script, func(b *Box) []string {
		return []string{"PATH=/usr/bin:/bin", "HOME=" + b.Path(InsideHome), "OUT=" + b.Path(InsideOut)}
	})
}

// At the uid level a command runs as a uid of its own, without
// capabilities, writes only its own directories, cannot read the grader's
// 0600 files or another box's directory, and its limits hold.
func TestUIDBoxIdentityFilesAndLimits(t *testing.T) {
	cfg := needUIDBoxes(t)
	cfg.Limits.DiskBytes = 8 << 20
	secret := filepath.Join(t.TempDir(), "grader-secret")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret"), 0o600))
	sub := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(sub, "main.py"), []byte("print(1)\n"), 0o644))
	r := runUID(t, cfg, Request{SubmissionDir: sub}, `id -u; grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status
cat `+secret+` 2>/dev/null && echo READ-SECRET || echo secret-closed
echo x > main.py && echo wrote-copy
echo hi > "$HOME/h" && echo > "$OUT/o" && echo > "$TMPDIR/t" && echo wrote-own
ls `+cfg.StateDir+`/u >/dev/null 2>&1 && echo LISTED || echo boxes-unlisted
touch `+cfg.StateDir+`/boxes/x 2>/dev/null && echo WROTE-STATE || echo state-closed
grep 'Max processes' /proc/self/limits | awk '{print $3}'; ulimit -n; grep 'Max file size' /proc/self/limits | awk '{print $4}'
head -c 20000000 /dev/zero > "$HOME/big" 2>/dev/null; echo big=$(stat -c %s "$HOME/big")`)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 12, r.stdout+r.stderr)
	uid := r.box.UID()
	assert.Equal(t, strconv.Itoa(uid), lines[0])
	assert.NotEqual(t, "0", lines[0])
	assert.Contains(t, lines[1], "0000000000000000", "no capabilities")
	assert.Contains(t, lines[2], "1", "no_new_privs")
	assert.Equal(t, "secret-closed", lines[3])
	assert.Equal(t, "wrote-copy", lines[4], "its copy of the submission is its own")
	assert.Equal(t, "wrote-own", lines[5])
	assert.Equal(t, "boxes-unlisted", lines[6])
	assert.Equal(t, "state-closed", lines[7])
	assert.Equal(t, strconv.FormatInt(DefaultLimits.Pids, 10), lines[8], "RLIMIT_NPROC")
	assert.Equal(t, strconv.FormatInt(DefaultLimits.NoFile, 10), lines[9], "RLIMIT_NOFILE")
	assert.Equal(t, strconv.FormatInt(cfg.Limits.DiskBytes, 10), lines[10], "RLIMIT_FSIZE")
	assert.Equal(t, "big="+strconv.FormatInt(cfg.Limits.DiskBytes, 10), lines[11], "a file stops at RLIMIT_FSIZE")
	data, err := os.ReadFile(filepath.Join(sub, "main.py"))
	require.NoError(t, err)
	assert.Equal(t, "print(1)\n", string(data), "the submission's own directory is never written")
	st := r.box.Status()
	assert.Equal(t, LevelUID, st.Level)
	assert.Equal(t, "partial", st.Mode)
	assert.NotEmpty(t, st.Degraded, "what the uid level lacks is said")
}

// Every process of the uid goes at the end, a setsid double-forked daemon
// included, and nothing of the box is left on disk.
func TestUIDBoxKillsEveryProcessOfItsUID(t *testing.T) {
	cfg := needUIDBoxes(t)
	b, err := Open(cfg, Request{Name: t.Name(), SubmissionDir: t.TempDir()})
	require.NoError(t, err)
	cmd := b.Command([]string{"/bin/sh", "-c", `setsid sh -c 'sleep 300 & sleep 300' </dev/null >/dev/null 2>&1 & (sleep 300 </dev/null >/dev/null 2>&1 &) ; sleep 0.3; echo started`},
		[]string{"PATH=/usr/bin:/bin", "HOME=" + b.Path(InsideHome)}, "")
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "started\n", string(out))
	uid := b.UID()
	assert.NotEmpty(t, uidPids(uid), "the daemons outlived the command until the box ends")
	scratch := b.scratch
	b.Close()
	deadline := time.Now().Add(2 * time.Second)
	for len(uidPids(uid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Empty(t, uidPids(uid), "a process of the box's uid outlived it")
	assert.Zero(t, b.Status().Survivors)
	_, err = os.Stat(scratch)
	assert.True(t, os.IsNotExist(err), "the box's directory is removed")
}

// A fork bomb stops at RLIMIT_NPROC (the uid's processes) and is ended.
func TestUIDBoxBoundsProcesses(t *testing.T) {
	cfg := needUIDBoxes(t)
	cfg.Limits.Pids = 20
	b, err := Open(cfg, Request{Name: t.Name(), SubmissionDir: t.TempDir()})
	require.NoError(t, err)
	defer b.Close()
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		t.Skip("no python3")
	}
	cmd := b.Command([]string{py, "-c", `import os, time
for i in range(100):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
print("forked", flush=True)
time.sleep(30)`},
		[]string{"PATH=/usr/bin:/bin", "HOME=" + b.Path(InsideHome)}, "")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line := make([]byte, 7)
	_, err = io.ReadFull(out, line)
	require.NoError(t, err, errb.String())
	assert.Equal(t, "forked\n", string(line))
	n := len(uidPids(b.UID()))
	assert.LessOrEqual(t, n, 20, "RLIMIT_NPROC bounds the uid's processes")
	assert.Greater(t, n, 10, "the command forked up to its limit")
	b.Kill()
	_ = cmd.Wait()
	assert.Empty(t, uidPids(b.UID()))
}

func TestLevelsTable(t *testing.T) {
	assert.True(t, LevelUID.Below(LevelFull))
	assert.True(t, LevelNone.Below(LevelUID))
	assert.False(t, LevelFull.Below(LevelFull))
	assert.Equal(t, LevelNone, Weakest(LevelFull, LevelNone, LevelUID))
	assert.Equal(t, Level(""), Weakest())
	for _, l := range []Level{LevelFull, LevelUID, LevelNone} {
		assert.Equal(t, len(Protections), len(Holds(l))+len(Lacks(l)), l)
	}
	assert.Empty(t, Lacks(LevelFull)[0:0])
	_, err := ParseLevel("userns")
	assert.Error(t, err, "userns is not built")
	l, err := ParseLevel("auto")
	assert.NoError(t, err)
	assert.Equal(t, Level(""), l)
}

// ShowSiblings at the uid level: ../<file> and ../<dir>/… lead to the host's
// entries (the calibration set's ../hostile_attacks.py and ../student/…).
func TestUIDBoxShowsSiblings(t *testing.T) {
	cfg := needUIDBoxes(t)
	parent := t.TempDir()
	require.NoError(t, os.Chmod(parent, 0o755))
	sub := filepath.Join(parent, "me")
	require.NoError(t, os.MkdirAll(filepath.Join(parent, "student"), 0o755))
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(parent, "attacks.py"), []byte("file\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(parent, "student", "x"), []byte("dir\n"), 0o644))
	r := runUID(t, cfg, Request{SubmissionDir: sub, ShowSiblings: true}, `cat ../attacks.py ../student/x; echo y > ../attacks.py 2>/dev/null && echo WROTE || echo read-only`)
	assert.Equal(t, "file\ndir\nread-only\n", r.stdout, r.stderr)
}
