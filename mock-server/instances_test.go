package mockserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const bundledChildEnv = "OSB_TEST_BUNDLED_CHILD_ROOT"

// bundledChild is a bundled server in a child process: it creates one
// sandbox, prints "ready <state dir> <sandbox id>" and waits to be killed.
func bundledChild(root string) int {
	b, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateRoot: root})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	req, _ := http.NewRequest("POST", b.Server.URL()+"/v1/sandboxes", strings.NewReader(
		`{"image":{"uri":"python:3.11"},"entrypoint":["sleep","infinity"],"resourceLimits":{"memory":"256Mi"}}`))
	req.Header.Set(headerAPIKey, testKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusAccepted {
		fmt.Println("error create", err, res)
		return 1
	}
	var created struct{ ID string }
	_ = json.NewDecoder(res.Body).Decode(&created)
	id := created.ID
	fmt.Println("ready", b.StateDir, id)
	select {}
}

// TestSIGKILLedBundledServerIsReaped: a bundled server killed with SIGKILL
// leaves a sandbox's namespace, cgroups, disk mount and its instance
// directory; the next start under the same state root removes all of it and
// never touches a live instance.
func TestSIGKILLedBundledServerIsReaped(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("not measured: needs root and the real runtime")
	}
	root := t.TempDir()
	live, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateRoot: root})
	require.NoError(t, err)
	defer live.Close()
	if ok, reason := live.Runtime.Isolation(); !ok {
		t.Skipf("not measured: isolation not enforced (%s)", reason)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), bundledChildEnv+"="+root)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, _ := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	require.Len(t, f, 3, "child said %q", line)
	require.Equal(t, "ready", f[0], line)
	dir, id := f[1], f[2]
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	netns := "/run/netns/osb-" + id[:12]
	cg := filepath.Join("/sys/fs/cgroup/pids/osb", id)
	_, nsErr := os.Stat(netns)
	require.NoError(t, nsErr, "the killed server left its sandbox's netns (precondition)")
	assert.DirExists(t, dir)

	next, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateRoot: root})
	require.NoError(t, err)
	defer next.Close()
	t.Logf("reaped: %v", next.Reaped)
	assert.NoFileExists(t, netns, "netns reaped")
	if _, err := os.Stat("/sys/fs/cgroup/pids"); err == nil {
		assert.NoDirExists(t, cg, "cgroup reaped")
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.NoDirExists(t, dir, "the dead instance's directory is removed")
	assert.DirExists(t, live.StateDir, "a live instance is never touched")
	assert.DirExists(t, next.StateDir)
	mounts, _ := os.ReadFile("/proc/self/mounts")
	assert.NotContains(t, string(mounts), dir, "its disk mount is gone")

	// An explicit state dir held by a live server is refused.
	_, err = StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateDir: live.StateDir})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "in use by a live bundled server")
}

// TestStaleEgressSocketsRemovedOnStart: egress/<id>.sock files a killed
// server left in its state dir are removed by the next start.
func TestStaleEgressSocketsRemovedOnStart(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "egress"), 0o700))
	stale := filepath.Join(dir, "egress", "0b7e-dead.sock")
	require.NoError(t, os.WriteFile(stale, nil, 0o600))
	b, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateDir: dir, InsecureNoIsolation: true})
	require.NoError(t, err)
	defer b.Close()
	assert.NoFileExists(t, stale)
	assert.Contains(t, b.Reaped, "socket "+stale)
}

// TestNamedVolumesOutliveInstances: the default volume root lives under the
// state root, and starting a bundled server (which reaps dead instances
// there) never removes it or a volume in it — named volumes persist across
// runs, as Docker's do.
func TestNamedVolumesOutliveInstances(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "volumes", "kept")
	require.NoError(t, os.MkdirAll(vol, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(vol, "data.txt"), []byte("x"), 0o644))
	for i := 0; i < 2; i++ {
		b, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateRoot: root, InsecureNoIsolation: true})
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(root, "volumes"), b.VolumeRoot)
		assert.Equal(t, b.VolumeRoot, b.Server.cfg.VolumeRoot)
		for _, r := range b.Reaped {
			assert.NotContains(t, r, "volumes", "reaped %s", r)
		}
		require.NoError(t, b.Close())
		assert.FileExists(t, filepath.Join(vol, "data.txt"))
	}
	other := t.TempDir()
	b, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateRoot: root, VolumeRoot: other, InsecureNoIsolation: true})
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, other, b.Server.cfg.VolumeRoot)
}
