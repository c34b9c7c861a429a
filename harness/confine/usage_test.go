package confine

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command that leaves a setsid'd daemon behind, which burns CPU and holds
// memory until the box is killed, is charged all of it: the box's cgroup
// counts every process that ran in it, waited for or not.
func TestBoxUsageCountsAnEscapedDaemon(t *testing.T) {
	cfg := needBoxes(t)
	b, err := Open(cfg, Request{Name: "usage", SubmissionDir: t.TempDir()})
	require.NoError(t, err)
	defer b.Close()
	require.NotNil(t, b.cg, b.Status().Degraded)
	// The daemon: 64 MiB touched, then 0.6 s of its own CPU, then it says
	// so and burns on until it is killed. The command itself only waits.
	daemon := `import time, pathlib
m = b"x" * (64 << 20)
while time.process_time() < 0.6:
    pass
pathlib.Path("/tmp/burned").touch()
while True:
    pass`
	script := `setsid python3 -c "$DAEMON" </dev/null >/dev/null 2>&1 &
i=0; while [ ! -e /tmp/burned ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
[ -e /tmp/burned ] && echo burned`
	cmd := b.Command([]string{"/bin/sh", "-c", script}, []string{"PATH=/usr/bin:/bin", "DAEMON=" + daemon}, "")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), errb.String())
	require.Contains(t, out.String(), "burned", errb.String())
	own := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	b.Kill()
	b.Close()
	u := b.Status().Usage
	require.NotNil(t, u)
	assert.Empty(t, u.Missing)
	assert.GreaterOrEqual(t, u.CPUSeconds, 0.6, "the daemon's CPU is the command's")
	assert.GreaterOrEqual(t, u.PeakMemoryBytes, int64(64<<20), "the daemon's memory is the command's")
	assert.NotEmpty(t, u.Source)
	t.Logf("cgroup: %.2f CPU-s, peak %d MiB (%s); the command's rusage: %.2f CPU-s", u.CPUSeconds, u.PeakMemoryBytes>>20, u.Source, own)
}

// The counters are read from the v1 files (cpuacct, memory) or the v2 group's;
// a missing one is said, never a silent 0.
func TestCgroupUsageFiles(t *testing.T) {
	write := func(dir, name, body string) {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	root := t.TempDir()
	v1 := &cgroup{Dirs: map[string]string{"cpuacct": filepath.Join(root, "cpuacct", "box"), "memory": filepath.Join(root, "memory", "box")}}
	write(v1.Dirs["cpuacct"], "cpuacct.usage", "1500000000\n")
	write(v1.Dirs["memory"], "memory.max_usage_in_bytes", "67108864\n")
	u := usageOf(v1)
	assert.Equal(t, 1.5, u.CPUSeconds)
	assert.Equal(t, int64(64<<20), u.PeakMemoryBytes)
	assert.Empty(t, u.Missing)
	assert.Contains(t, u.Source, "v1")

	g := filepath.Join(root, "v2", "box")
	v2 := &cgroup{V2: true, Dirs: map[string]string{"freezer": g, "memory": g, "cpu": g}}
	write(g, "cpu.stat", "usage_usec 2250000\nuser_usec 2000000\nsystem_usec 250000\n")
	write(g, "memory.peak", "1048576\n")
	u = usageOf(v2)
	assert.Equal(t, 2.25, u.CPUSeconds)
	assert.Equal(t, int64(1<<20), u.PeakMemoryBytes)
	assert.Empty(t, u.Missing)

	require.NoError(t, os.Remove(filepath.Join(g, "memory.peak"))) // a kernel before 5.19
	u = usageOf(v2)
	assert.Equal(t, 2.25, u.CPUSeconds)
	require.Len(t, u.Missing, 1)
	assert.Contains(t, u.Missing[0], "memory.peak does not exist")

	none := &cgroup{Dirs: map[string]string{"pids": filepath.Join(root, "pids", "box")}}
	u = usageOf(none)
	assert.Len(t, u.Missing, 2, "no cpuacct and no memory controller: both said")
}
