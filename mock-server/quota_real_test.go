//go:build linux

package mockserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Real attacks on the limits, quotas and volumes of quota.go and
// tenantvolumes.go: they start sandboxes on the isolating runtime, so they
// are skipped under -short and where isolation is not enforced.

func isolatedEnv(t *testing.T) *Server {
	t.Helper()
	srv, _ := realEnv(t)
	if ok, why := srv.cfg.Runtime.Isolation(); !ok {
		t.Skipf("not measured: limits and volumes need the isolating runtime (%s)", why)
	}
	return srv
}

func apiDoKey(t testing.TB, srv *Server, key, method, path string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, srv.URL()+path, strings.NewReader(string(b)))
	req.Header.Set(headerAPIKey, key)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

func createWithKey(t *testing.T, srv *Server, key string, body map[string]any) (string, string) {
	t.Helper()
	status, m := apiDoKey(t, srv, key, "POST", "/v1/sandboxes", body)
	require.Equal(t, http.StatusAccepted, status, "%v", m)
	id := m["id"].(string)
	_, ep := apiDoKey(t, srv, key, "GET", "/v1/sandboxes/"+id+"/endpoints/44772", nil)
	return id, "http://" + ep["endpoint"].(string)
}

// cgroupDirs are the cgroup directories a sandbox has on the host.
func cgroupDirs(id string) []string {
	var out []string
	for _, pat := range []string{"/sys/fs/cgroup/*/osb/" + id, "/sys/fs/cgroup/*/osb/*/" + id, "/sys/fs/cgroup/osb/" + id, "/sys/fs/cgroup/osb/*/" + id} {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	return out
}

func mountedAt(dir string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 4 && fs[4] == dir {
			return true
		}
	}
	return false
}

func TestDefaultLimitsHoldAgainstAForkBombAndAMemoryHog(t *testing.T) {
	srv := isolatedEnv(t)
	body := validCreate()
	body["resourceLimits"] = map[string]string{} // leaves every limit out
	id, base := createWithKey(t, srv, testKey, body)
	for _, d := range cgroupDirs(id) {
		if b, err := os.ReadFile(filepath.Join(d, "pids.max")); err == nil {
			assert.Equal(t, "256", strings.TrimSpace(string(b)), d)
		}
		if b, err := os.ReadFile(filepath.Join(d, "memory.limit_in_bytes")); err == nil {
			assert.Equal(t, strconv.Itoa(1<<30), strings.TrimSpace(string(b)), d)
		}
	}

	// a fork bomb (bounded here: 600 children) stops at the default pids limit
	out, _ := runCommand(t, base, `python3 -c '
import os, signal, time
kids = []
for i in range(600):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
for k in kids:  # the sandbox gets its pids back for what follows
    os.kill(k, signal.SIGKILL)
    os.waitpid(k, 0)
print(len(kids))'`)
	require.NotEmpty(t, out, "the fork loop printed its count")
	n, err := strconv.Atoi(out[len(out)-1])
	require.NoError(t, err, "%q", out)
	assert.Less(t, n, 256, "children started past the default pids limit")
	assert.Greater(t, n, 100, "the fork loop did fork (the test measures something)")

	// 1.5 GiB written into memory is more than the default 1 GiB allows
	out, code := runCommand(t, base, `python3 -c 'x = b"a" * (1536 << 20); print("allocated", len(x))'`)
	assert.NotContains(t, out, "allocated 1610612736", "the sandbox held 1.5 GiB")
	require.NotNil(t, code)
	assert.NotZero(t, *code, "the hog was stopped (OOM kill or MemoryError)")
}

func TestTenantVolumesQuotaNosuidIsolationAndRelease(t *testing.T) {
	srv := isolatedEnv(t)
	root := t.TempDir()
	// nobody must be able to reach the volumes (the setuid check below runs as nobody)
	require.NoError(t, os.Chmod(root, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(root), 0o755))
	srv.cfg.VolumeRoot = root
	srv.cfg.VolumeQuotaBytes = 16 << 20
	require.NoError(t, srv.AddAPIKeyTenant("key-a", "submission:1"))
	require.NoError(t, srv.AddAPIKeyTenant("key-b", "submission:2"))
	withVolume := func() map[string]any {
		b := validCreate()
		b["volumes"] = []map[string]any{{"name": "vol", "pvc": map[string]any{"claimName": "data"}, "mountPath": "/data"}}
		return b
	}
	a, aBase := createWithKey(t, srv, "key-a", withVolume())
	srv.volumes.mu.Lock()
	aRoot := srv.volumes.tenants["submission:1"].dir
	srv.volumes.mu.Unlock()
	require.True(t, strings.HasPrefix(aRoot, filepath.Join(root, tenantVolumesDir)+"/"), aRoot)

	// the disk quota holds: 40 MiB into a 16 MiB quota fails
	out, _ := runCommand(t, aBase, "dd if=/dev/zero of=/data/big bs=1M count=40 2>&1; echo rc=$?")
	assert.Contains(t, strings.Join(out, "\n"), "No space left on device", "%q", out)
	assert.NotContains(t, out, "rc=0")
	if st, err := os.Stat(filepath.Join(aRoot, "data", "big")); err == nil {
		assert.LessOrEqual(t, st.Size(), int64(16<<20), "the file is bounded by the quota")
	}
	var sfs unix.Statfs_t
	require.NoError(t, unix.Statfs(aRoot, &sfs))
	assert.NotZero(t, sfs.Flags&unix.ST_NOSUID, "the tenant's volumes are mounted nosuid on the host")
	assert.NotZero(t, sfs.Flags&unix.ST_NODEV, "the tenant's volumes are mounted nodev on the host")

	// a setuid-root binary in the volume, the sandbox's own and one planted
	// as root on the host: run by nobody it gives no privilege
	out, _ = runCommand(t, aBase, "rm -f /data/big; cp /usr/bin/id /data/id-by-sandbox && chmod 4755 /data/id-by-sandbox; echo planted; grep ' /data ' /proc/self/mountinfo")
	require.Contains(t, out, "planted")
	assert.Contains(t, strings.Join(out, "\n"), "nosuid", "the mount inside the sandbox is nosuid")
	planted := filepath.Join(aRoot, "data", "id-by-host")
	src, err := os.ReadFile("/usr/bin/id")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(planted, src, 0o755))
	require.NoError(t, os.Chown(planted, 0, 0))
	require.NoError(t, unix.Chmod(planted, 0o4755))
	require.NoError(t, os.Chmod(filepath.Join(root, tenantVolumesDir), 0o755)) // 0700: let nobody reach it for the attack
	for _, bin := range []string{planted, filepath.Join(aRoot, "data", "id-by-sandbox")} {
		st, err := os.Stat(bin)
		require.NoError(t, err)
		t.Logf("%s: mode %v, owner %d", filepath.Base(bin), st.Mode(), st.Sys().(*syscall.Stat_t).Uid)
		cmd := exec.Command(bin, "-u")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		b, err := cmd.Output()
		require.NoError(t, err, "%s as nobody", bin)
		assert.Equal(t, "65534", strings.TrimSpace(string(b)), "%s gave nobody another euid", bin)
	}

	// another tenant naming the same claim gets its own, empty volume
	b, bBase := createWithKey(t, srv, "key-b", withVolume())
	out, _ = runCommand(t, bBase, "ls -A /data; echo listed")
	assert.Equal(t, []string{"listed"}, out, "tenant b sees nothing of tenant a's volume")
	// and the untenanted key's shared root has none of it either
	_, sBase := createWithKey(t, srv, testKey, withVolume())
	out, _ = runCommand(t, sBase, "ls -A /data; echo listed")
	assert.Equal(t, []string{"listed"}, out)

	// releasing tenant a leaves nothing of it: sandboxes, processes, cgroups, volumes
	pids := srv.lookup(a).rt.Pids()
	require.NotEmpty(t, pids)
	require.NotEmpty(t, cgroupDirs(a), "the sandbox has cgroups (precondition)")
	sbDir := srv.lookup(a).rt.Dir()
	rel, err := srv.ReleaseTenant("submission:1")
	require.NoError(t, err)
	assert.Equal(t, []string{a}, rel.Sandboxes)
	assert.Equal(t, http.StatusUnauthorized, func() int { s, _ := apiDoKey(t, srv, "key-a", "GET", "/v1/sandboxes", nil); return s }())
	assert.Eventually(t, func() bool {
		for _, p := range pids {
			if syscall.Kill(p, 0) == nil {
				return false
			}
		}
		return true
	}, 10*time.Second, 100*time.Millisecond, "a released tenant's processes are gone")
	assert.Empty(t, cgroupDirs(a), "its cgroups are gone")
	_, err = os.Stat(sbDir)
	assert.True(t, os.IsNotExist(err), "its sandbox directory is gone")
	_, err = os.Stat(aRoot)
	assert.True(t, os.IsNotExist(err), "its volumes are gone")
	assert.False(t, mountedAt(aRoot), "its volume quota is unmounted")

	// tenant b is untouched, until the server stops
	out, _ = runCommand(t, bBase, "echo still > /data/x && cat /data/x")
	assert.Equal(t, []string{"still"}, out)
	srv.volumes.mu.Lock()
	bRoot := srv.volumes.tenants["submission:2"].dir
	srv.volumes.mu.Unlock()
	require.NoError(t, srv.Close())
	_, err = os.Stat(bRoot)
	assert.True(t, os.IsNotExist(err), "a tenant's volumes end with the server")
	assert.False(t, mountedAt(bRoot))
	assert.Empty(t, cgroupDirs(b))
}

const forkLoop = `python3 -c '
import os, sys, time
n = 0
for i in range(%d):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    n += 1
print(n)'`

func forked(t *testing.T, base string, want int) int {
	t.Helper()
	out, _ := runCommand(t, base, fmt.Sprintf(forkLoop, want))
	require.NotEmpty(t, out)
	n, err := strconv.Atoi(out[len(out)-1])
	require.NoError(t, err, "%q", out)
	return n
}

// The processes of one tenant's sandboxes are bounded together (the
// tenant's cgroup parent), whatever each sandbox's own limit; another
// tenant is not charged; releasing the tenant removes its group.
func TestTenantGroupBoundsWhatItsSandboxesUseTogether(t *testing.T) {
	srv := isolatedEnv(t)
	srv.cfg.TenantQuota = Quota{Pids: 300}
	require.NoError(t, srv.AddAPIKeyTenant("key-a", "submission:1"))
	require.NoError(t, srv.AddAPIKeyTenant("key-b", "submission:2"))
	body := validCreate()
	body["resourceLimits"] = map[string]string{"pids": "250"}
	a1, a1Base := createWithKey(t, srv, "key-a", body)
	_, a2Base := createWithKey(t, srv, "key-a", body)
	_, bBase := createWithKey(t, srv, "key-b", body)
	group, _ := srv.tenantGroup("submission:1")
	groupDirs, _ := filepath.Glob("/sys/fs/cgroup/pids/osb/" + group)
	if _, err := os.Stat("/sys/fs/cgroup/pids"); err == nil {
		require.Len(t, groupDirs, 1, "the tenant's pids group (cgroup v1)")
		b, err := os.ReadFile(filepath.Join(groupDirs[0], "pids.max"))
		require.NoError(t, err)
		assert.Equal(t, "300", strings.TrimSpace(string(b)))
		assert.DirExists(t, filepath.Join(groupDirs[0], a1), "the sandbox's group is inside its tenant's")
	}

	first := forked(t, a1Base, 200)
	assert.Equal(t, 200, first, "within its own limit and the tenant's")
	second := forked(t, a2Base, 200)
	assert.Less(t, second, 100, "a second sandbox of the tenant gets only what the first left of the tenant's 300")
	assert.Greater(t, second, 10, "it did fork (the test measures something)")
	assert.Equal(t, 200, forked(t, bBase, 200), "another tenant is not charged for it")

	_, err := srv.ReleaseTenant("submission:1")
	require.NoError(t, err)
	for _, d := range groupDirs {
		assert.NoDirExists(t, d, "the tenant's group goes with its last sandbox")
	}
	for _, pat := range []string{"/sys/fs/cgroup/*/osb/" + group} {
		m, _ := filepath.Glob(pat)
		assert.Empty(t, m)
	}
}

// A sandbox asking for more CPU than its tenant may use together starts (its
// CPU is the tenant's at most), and what it does not say gets the defaults.
func TestTenantSandboxAskingMoreCPUThanItsTenantStarts(t *testing.T) {
	srv := isolatedEnv(t)
	srv.cfg.TenantQuota = Quota{CPUMilli: 500}
	require.NoError(t, srv.AddAPIKeyTenant("key-a", "submission:1"))
	body := validCreate()
	body["resourceLimits"] = map[string]string{"cpu": "1"}
	id, base := createWithKey(t, srv, "key-a", body)
	out, _ := runCommand(t, base, "echo up")
	assert.Equal(t, []string{"up"}, out)
	if _, err := os.Stat("/sys/fs/cgroup/cpu"); err == nil {
		require.NotEmpty(t, cgroupDirs(id), "the sandbox's cgroups (cgroup v1)")
	}
	for _, d := range cgroupDirs(id) {
		if b, err := os.ReadFile(filepath.Join(d, "cpu.cfs_quota_us")); err == nil {
			assert.Equal(t, "50000", strings.TrimSpace(string(b)), "clamped to the tenant's 0.5 CPU")
		}
	}
}

// Memory: two sandboxes of one tenant, each within its own limit, cannot
// hold more than the tenant's memory together.
func TestTenantGroupBoundsMemoryTogether(t *testing.T) {
	srv := isolatedEnv(t)
	srv.cfg.TenantQuota = Quota{MemoryBytes: 1 << 30}
	require.NoError(t, srv.AddAPIKeyTenant("key-a", "submission:1"))
	body := validCreate()
	body["resourceLimits"] = map[string]string{"memory": "1Gi"}
	_, aBase := createWithKey(t, srv, "key-a", body)
	_, bBase := createWithKey(t, srv, "key-a", body)
	type result struct {
		out  []string
		code *int
	}
	aDone := make(chan result, 1)
	go func() { // a holds 700 MiB until the test says release (at most 120 s)
		var r result
		defer func() { aDone <- r }() // sent even if runCommand's require ends the goroutine
		r.out, r.code = runCommand(t, aBase, `python3 -c '
import os, time
x = b"a" * (700 << 20)
open("/tmp/held", "w").write("held")
print("held", flush=True)
for _ in range(1200):
    if os.path.exists("/tmp/release"):
        break
    time.sleep(0.1)
print("released")'`)
	}()
	// b starts only once a holds its memory (a fixed sleep once let b run
	// first on a loaded machine, and a was then the one refused).
	held := false
	for deadline := time.Now().Add(90 * time.Second); !held && time.Now().Before(deadline); {
		out, _ := runCommand(t, aBase, `cat /tmp/held 2>/dev/null; true`)
		held = slices.Contains(out, "held")
		if !held {
			time.Sleep(200 * time.Millisecond)
		}
	}
	require.True(t, held, "the first sandbox allocated within 90 s (precondition)")
	bOut, bCode := runCommand(t, bBase, `python3 -c 'x = b"a" * (700 << 20); print("allocated")'`)
	runCommand(t, aBase, `touch /tmp/release`)
	a := <-aDone
	aHeld := a.code != nil && *a.code == 0 && strings.Contains(strings.Join(a.out, "\n"), "released")
	bGot := bCode != nil && *bCode == 0 && strings.Contains(strings.Join(bOut, "\n"), "allocated")
	t.Logf("a held to the end: %v (%q); b allocated: %v (%q)", aHeld, a.out, bGot, bOut)
	assert.False(t, aHeld && bGot, "the tenant's sandboxes held 1.4 GiB together")
}
