package mockserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

const (
	bundledChildEnv        = "OSB_TEST_BUNDLED_CHILD_ROOT"
	bundledChildVolumesEnv = "OSB_TEST_BUNDLED_CHILD_VOLUMES"
	bundledChildTenantEnv  = "OSB_TEST_BUNDLED_CHILD_TENANT" // private volumes, a tenant's key and volume
)

// bundledChild is a bundled server in a child process: it creates one
// sandbox, prints "ready <state dir> <sandbox id>" and waits to be killed.
func bundledChild(root string) int {
	tenanted := os.Getenv(bundledChildTenantEnv) != ""
	b, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateRoot: root, PrivateVolumes: tenanted})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	key, vols := testKey, ""
	if tenanted {
		key = "child-tenant-key"
		if err := b.Server.AddAPIKeyTenant(key, "submission:1"); err != nil {
			fmt.Println("error", err)
			return 1
		}
		vols = `,"volumes":[{"name":"a","pvc":{"claimName":"data"},"mountPath":"/a"}]`
	}
	if os.Getenv(bundledChildVolumesEnv) != "" {
		// two volumes it auto-creates, to be deleted once unused
		vols = `,"volumes":[{"name":"a","pvc":{"claimName":"scratch","deleteOnSandboxTermination":true},"mountPath":"/a"},` +
			`{"name":"b","pvc":{"claimName":"busy","deleteOnSandboxTermination":true},"mountPath":"/b"}]`
	}
	req, _ := http.NewRequest("POST", b.Server.URL()+"/v1/sandboxes", strings.NewReader(
		`{"image":{"uri":"python:3.11"},"entrypoint":["sleep","infinity"],"resourceLimits":{"memory":"256Mi"}`+vols+`}`))
	req.Header.Set(headerAPIKey, key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusAccepted {
		if res != nil {
			b, _ := io.ReadAll(res.Body)
			fmt.Println("error create", res.StatusCode, string(b))
			return 1
		}
		fmt.Println("error create", err)
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

// TestSIGKILLedServersOwnedVolumesAreReaped: a bundled server killed with
// SIGKILL leaves two named volumes it auto-created with
// deleteOnSandboxTermination; one is also mounted by a sandbox of a live
// server. The next start removes the unused one and keeps the one in use;
// the live server removes that one when its last sandbox using it is gone.
// A volume that was never auto-created for deletion is never removed.
func TestSIGKILLedServersOwnedVolumesAreReaped(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("not measured: needs root and the real runtime")
	}
	root := t.TempDir()
	vols := filepath.Join(root, volumesDirName)
	live, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateRoot: root})
	require.NoError(t, err)
	defer live.Close()
	if ok, reason := live.Runtime.Isolation(); !ok {
		t.Skipf("not measured: volumes need the isolating runtime (%s)", reason)
	}
	require.NoError(t, os.MkdirAll(filepath.Join(vols, "kept"), 0o755))

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), bundledChildEnv+"="+root, bundledChildVolumesEnv+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, _ := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	require.Len(t, f, 3, "child said %q", line)
	require.Equal(t, "ready", f[0], line)
	dir := f[1]
	require.DirExists(t, filepath.Join(vols, "scratch"), "auto-created (precondition)")
	require.DirExists(t, filepath.Join(vols, "busy"), "auto-created (precondition)")

	// the live server mounts "busy" (it exists: not created by this request) and "kept"
	status, m := apiDo(t, live.Server, "POST", "/v1/sandboxes", map[string]any{
		"image": map[string]any{"uri": "python:3.11"}, "entrypoint": []string{"sleep", "infinity"},
		"resourceLimits": map[string]any{"memory": "256Mi"}, "timeout": 600,
		"volumes": []map[string]any{
			{"name": "b", "pvc": map[string]any{"claimName": "busy"}, "mountPath": "/b"},
			{"name": "k", "pvc": map[string]any{"claimName": "kept", "deleteOnSandboxTermination": true}, "mountPath": "/k"},
		}})
	require.Equal(t, http.StatusAccepted, status, "%v", m)
	liveID := m["id"].(string)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.DirExists(t, filepath.Join(vols, "scratch"), "SIGKILL leaves the volume (precondition)")

	next, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateRoot: root})
	require.NoError(t, err)
	defer next.Close()
	t.Logf("reaped: %v", next.Reaped)
	assert.NoDirExists(t, dir, "the dead instance is reaped")
	assert.NoDirExists(t, filepath.Join(vols, "scratch"), "its unused auto-created volume is removed")
	assert.Contains(t, next.Reaped, "named volume "+filepath.Join(vols, "scratch"))
	assert.DirExists(t, filepath.Join(vols, "busy"), "a volume a live server's sandbox mounts is kept")
	assert.DirExists(t, filepath.Join(vols, "kept"), "a volume that existed before is never removed")

	status, _ = apiDo(t, live.Server, "DELETE", "/v1/sandboxes/"+liveID, nil)
	require.Equal(t, http.StatusNoContent, status)
	assert.NoDirExists(t, filepath.Join(vols, "busy"), "removed once the live server's last use is gone")
	assert.DirExists(t, filepath.Join(vols, "kept"))
	owned, err := os.ReadDir(filepath.Join(vols, volumeRegDir, "owned"))
	require.NoError(t, err)
	assert.Empty(t, owned, "no deletion pending")
}

// TestSIGKILLedServersTenantVolumesAreReaped: a grader's bundled server
// (private volumes) killed with SIGKILL leaves a tenant's volume quota
// mounted in its instance directory; the next start unmounts and removes it
// with the instance.
func TestSIGKILLedServersTenantVolumesAreReaped(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("not measured: needs root and the real runtime")
	}
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), bundledChildEnv+"="+root, bundledChildTenantEnv+"=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, _ := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if len(f) > 0 && f[0] == "error" && strings.Contains(line, "isolat") {
		_ = cmd.Wait()
		t.Skipf("not measured: %s", line)
	}
	require.Len(t, f, 3, "child said %q", line)
	dir := f[1]
	tenantRoots, _ := filepath.Glob(filepath.Join(dir, volumesDirName, tenantVolumesDir, "*"))
	require.Len(t, tenantRoots, 1, "the tenant's volume root is in the instance's state dir (precondition)")
	require.True(t, mountedAt(tenantRoots[0]), "its quota is mounted (precondition)")
	groups, _ := filepath.Glob("/sys/fs/cgroup/*/osb/t-*/" + f[2]) // the sandbox's groups inside its tenant's
	for i := range groups {
		groups[i] = filepath.Dir(groups[i])
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.True(t, mountedAt(tenantRoots[0]), "SIGKILL leaves the mount (precondition)")

	next, err := StartBundled(context.Background(), BundledConfig{APIKey: testKey, StateRoot: root, PrivateVolumes: true})
	require.NoError(t, err)
	defer next.Close()
	t.Logf("reaped: %v", next.Reaped)
	assert.False(t, mountedAt(tenantRoots[0]), "the dead server's tenant volumes are unmounted")
	assert.Contains(t, next.Reaped, "named volumes "+tenantRoots[0])
	if _, err := os.Stat("/sys/fs/cgroup/pids"); err == nil {
		assert.NotEmpty(t, groups, "the sandbox's cgroups were in its tenant's group (precondition)")
	}
	for _, g := range groups {
		assert.NoDirExists(t, g, "the dead server's tenant cgroup is removed")
	}
	assert.Eventually(t, func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) }, 5*time.Second, 50*time.Millisecond,
		"the dead instance, volumes included, is removed")
}
