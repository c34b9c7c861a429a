package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGraderMemoryClosedToItsUser: the canary wiper reads the admin token
// from /proc/<grader>/environ or mem. Where it runs as the grader's own
// (non-root) user, the hardened grader's memory and environment are closed to
// it; an unhardened process of that user is open (the control).
func TestGraderMemoryClosedToItsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the probe and the reader as another user")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	// The probe binary must be executable by the unprivileged user.
	dir, err := os.MkdirTemp("", "harden-probe-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	probe := filepath.Join(dir, "probe")
	b, err := os.ReadFile(exe)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(probe, b, 0o755))
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}

	readable := func(mode string) (bool, string) {
		cmd := exec.Command(probe, "harden-probe", mode)
		cmd.Env = []string{"PROBE_SECRET=admin-0123456789abcdef0123456789abcdef"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: nobody, Pdeathsig: syscall.SIGKILL}
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		line, _ := bufio.NewReader(out).ReadString('\n')
		require.Equal(t, "ready\n", line)
		pid := strconv.Itoa(cmd.Process.Pid)
		reader := exec.Command("/bin/cat", "/proc/"+pid+"/environ")
		reader.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
		got, err := reader.CombinedOutput()
		return err == nil && strings.Contains(string(got), "PROBE_SECRET="), string(got)
	}
	open, _ := readable("off")
	assert.True(t, open, "control: a process of the same user can read an unhardened process's environ")
	closed, got := readable("on")
	assert.False(t, closed, "the hardened grader's environ was readable by its own user")
	assert.Contains(t, got, "Permission denied")
}
