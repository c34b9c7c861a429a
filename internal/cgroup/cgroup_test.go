package cgroup

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fake hierarchy in a temporary directory: Detect tells v1 mounts from the
// unified hierarchy, and the limits land in each version's own files.
func TestDetectAndLimitFiles(t *testing.T) {
	v1root := t.TempDir()
	for _, c := range []string{"memory", "pids", "cpu"} {
		require.NoError(t, os.MkdirAll(filepath.Join(v1root, c), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(v1root, c, "cgroup.procs"), nil, 0o644))
	}
	v2, ctrls := Detect(v1root, []string{"memory", "pids", "cpu", "freezer"})
	assert.False(t, v2)
	assert.Equal(t, map[string]string{"memory": filepath.Join(v1root, "memory"), "pids": filepath.Join(v1root, "pids"), "cpu": filepath.Join(v1root, "cpu")}, ctrls,
		"an unmounted controller (freezer) is left out")
	g := At(v2, ctrls, "parent", "box")
	require.NoError(t, g.Mkdirs())
	require.NoError(t, g.SetMemory(64<<20))
	require.NoError(t, g.SetPids(100))
	require.NoError(t, g.SetCPU(500))
	read := func(ctrl, file string) string {
		b, err := os.ReadFile(filepath.Join(g.Dirs[ctrl], file))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "67108864", read("memory", "memory.limit_in_bytes"))
	assert.Equal(t, "100", read("pids", "pids.max"))
	assert.Equal(t, "100000", read("cpu", "cpu.cfs_period_us"))
	assert.Equal(t, "50000", read("cpu", "cpu.cfs_quota_us"))
	assert.False(t, g.Has("freezer"))
	assert.Error(t, g.Write("freezer", "freezer.state", "FROZEN"), "a missing controller is said")
	assert.Len(t, g.ProcsFiles(), 3, "one cgroup.procs per v1 controller")

	v2root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(v2root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644))
	v2, ctrls = Detect(v2root, []string{"memory"})
	assert.True(t, v2)
	assert.Len(t, ctrls, 4, "cpu, memory, pids and the core freezer")
	require.NoError(t, EnableSubtree(v2root, "parent", ctrls, []string{"memory", "pids", "io"}))
	b, err := os.ReadFile(filepath.Join(v2root, "parent", "cgroup.subtree_control"))
	require.NoError(t, err)
	assert.Equal(t, "+memory +pids", string(b), "only controllers the host has")
	g = At(v2, ctrls, "parent", "box")
	assert.Len(t, g.Unique(), 1, "one v2 group for every controller")
	require.NoError(t, g.Mkdirs())
	require.NoError(t, g.SetMemory(1<<20))
	g.NoSwap(1 << 20)
	require.NoError(t, g.SetCPU(1)) // at least 0.01 core
	assert.Equal(t, "1048576", read("memory", "memory.max"))
	assert.Equal(t, "0", read("memory", "memory.swap.max"))
	assert.Equal(t, "1000 100000", read("cpu", "cpu.max"))
	assert.Empty(t, g.Pids(), "no cgroup.procs: no process")
	assert.Empty(t, g.Kill(0, true), "an empty group is killed at once")

	// Remove deletes the directory (tmpfs keeps the files written above, so
	// empty it the way the kernel would), and a missing group is fine.
	for _, f := range []string{"memory.max", "memory.swap.max", "cpu.max", "cgroup.kill"} {
		_ = os.Remove(filepath.Join(g.Dirs["memory"], f))
	}
	require.NoError(t, g.Remove())
	require.NoError(t, g.Remove())
}
