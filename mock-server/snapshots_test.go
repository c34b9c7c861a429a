package mockserver

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func restoreBody(sid string) map[string]any {
	return map[string]any{"snapshotId": sid, "timeout": 600, "resourceLimits": map[string]string{"cpu": "500m", "memory": "512Mi"}}
}

func (e *testEnv) waitSnapshot(sid string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := e.call("GET", "/v1/snapshots/"+sid, nil, nil)
		require.Equal(e.t, http.StatusOK, r.Status, "%s", r.Body)
		m := r.JSON(e.t)
		if st := m["status"].(map[string]any)["state"]; st != "Creating" || time.Now().After(deadline) {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSnapshotsAsDocker: create (202 Creating, Location) → Ready; list
// filters and pagination; get; restore into a new sandbox (snapshotId, no
// image, default entrypoint, the writable directories' regular files seeded);
// delete; and 1.1.1's error codes. Every exchange is checked against the spec.
func TestSnapshotsAsDocker(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	dir := e.srv.lookup(id).rt.Dir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workspace", "a.txt"), []byte("hello"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tmp", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tmp", "sub", "b.sh"), []byte("#!/bin/sh\n"), 0o750))
	require.NoError(t, os.Symlink("/etc/shadow", filepath.Join(dir, "workspace", "link")))

	r := e.call("POST", "/v1/sandboxes/"+id+"/snapshots", map[string]any{"name": "before"}, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	m := r.JSON(t)
	sid := m["id"].(string)
	assert.Equal(t, "/v1/snapshots/"+sid, r.Header.Get("Location"))
	assert.Equal(t, id, m["sandboxId"])
	assert.Equal(t, "before", m["name"])
	assert.Equal(t, map[string]any{"state": "Creating", "reason": "snapshot_accepted", "message": "Snapshot creation accepted.",
		"lastTransitionAt": m["status"].(map[string]any)["lastTransitionAt"]}, m["status"])
	m = e.waitSnapshot(sid)
	require.Equal(t, "Ready", m["status"].(map[string]any)["state"], "%v", m)

	// A snapshot without a body, then the list and its filters.
	r = e.call("POST", "/v1/sandboxes/"+id+"/snapshots", nil, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	second := r.JSON(t)["id"].(string)
	assert.NotContains(t, r.JSON(t), "name")
	e.waitSnapshot(second)
	count := func(q string) int {
		r := e.call("GET", "/v1/snapshots"+q, nil, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		return len(r.JSON(t)["items"].([]any))
	}
	assert.Equal(t, 2, count(""))
	assert.Equal(t, 2, count("?sandboxId="+id))
	assert.Equal(t, 0, count("?sandboxId=other"))
	assert.Equal(t, 1, count("?name=before"))
	assert.Equal(t, 2, count("?state=Ready"))
	assert.Equal(t, 0, count("?state=Failed"))
	assert.Equal(t, 1, count("?pageSize=1&page=2"))
	assert.Equal(t, http.StatusUnprocessableEntity, e.call("GET", "/v1/snapshots?pageSize=201", nil, nil).Status)

	// Restore.
	r = e.call("POST", "/v1/sandboxes", restoreBody(sid), nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	rid := r.JSON(t)["id"].(string)
	g := e.call("GET", "/v1/sandboxes/"+rid, nil, nil).JSON(t)
	assert.Equal(t, sid, g["snapshotId"])
	assert.NotContains(t, g, "image")
	assert.Equal(t, []any{"tail", "-f", "/dev/null"}, g["entrypoint"])
	var seed map[string]string
	for _, f := range e.rt.sandboxes {
		if f.spec.ID == rid {
			seed = f.spec.Seed
		}
	}
	require.NotNil(t, seed, "the restore's runtime spec carries the snapshot")
	b, err := os.ReadFile(filepath.Join(seed["/workspace"], "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))
	fi, err := os.Stat(filepath.Join(seed["/tmp"], "sub", "b.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
	_, err = os.Lstat(filepath.Join(seed["/workspace"], "link"))
	assert.True(t, os.IsNotExist(err), "a symbolic link is not kept (nor followed)")
	// A restored sandbox can be snapshotted in turn.
	r = e.call("POST", "/v1/sandboxes/"+rid+"/snapshots", nil, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	e.waitSnapshot(r.JSON(t)["id"].(string))

	// Errors as 1.1.1 answers them.
	code := func(r resp) string { return r.JSON(t)["code"].(string) }
	r = e.call("POST", "/v1/sandboxes/nope/snapshots", nil, nil)
	assert.Equal(t, http.StatusNotFound, r.Status)
	assert.Equal(t, "DOCKER::SANDBOX_NOT_FOUND", code(r))
	assert.Equal(t, http.StatusUnprocessableEntity, e.call("POST", "/v1/sandboxes/"+id+"/snapshots", map[string]any{"name": ""}, nil).Status)
	assert.Equal(t, http.StatusUnprocessableEntity, e.call("POST", "/v1/sandboxes/"+id+"/snapshots", map[string]any{"name": 5}, nil).Status)
	r = e.call("POST", "/v1/sandboxes", restoreBody("missing"), nil)
	assert.Equal(t, http.StatusNotFound, r.Status)
	assert.Equal(t, "SNAPSHOT::NOT_FOUND", code(r))
	r = e.call("GET", "/v1/snapshots/missing", nil, nil)
	assert.Equal(t, http.StatusNotFound, r.Status)
	assert.Equal(t, "SNAPSHOT::NOT_FOUND", code(r))
	require.Equal(t, http.StatusAccepted, e.call("POST", "/v1/sandboxes/"+id+"/pause", nil, nil).Status)
	r = e.call("POST", "/v1/sandboxes/"+id+"/snapshots", nil, nil)
	assert.Equal(t, http.StatusConflict, r.Status)
	assert.Equal(t, "SNAPSHOT::INVALID_SOURCE_STATE", code(r))

	// Creating: not deletable; Failed: not restorable.
	e.srv.snaps.mu.Lock()
	e.srv.snaps.byID[second].state = "Creating"
	e.srv.snaps.mu.Unlock()
	r = e.call("DELETE", "/v1/snapshots/"+second, nil, nil)
	assert.Equal(t, http.StatusConflict, r.Status)
	assert.Equal(t, "SNAPSHOT::INVALID_STATE", code(r))
	e.srv.snaps.mu.Lock()
	e.srv.snaps.byID[second].state = "Failed"
	e.srv.snaps.mu.Unlock()
	r = e.call("POST", "/v1/sandboxes", restoreBody(second), nil)
	assert.Equal(t, http.StatusConflict, r.Status)
	assert.Equal(t, "SNAPSHOT::NOT_READY", code(r))

	// Delete: 204, then gone.
	assert.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/snapshots/"+sid, nil, nil).Status)
	assert.Equal(t, http.StatusNotFound, e.call("GET", "/v1/snapshots/"+sid, nil, nil).Status)
	assert.Equal(t, http.StatusNotFound, e.call("DELETE", "/v1/snapshots/"+sid, nil, nil).Status)
	_, err = os.Stat(filepath.Join(e.srv.snapshotRoot(), sid))
	assert.True(t, os.IsNotExist(err), "its copy is removed")
}

// Snapshots belong to their maker's tenant: another tenant's key neither
// lists, gets, deletes nor restores them.
func TestSnapshotsTenancy(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.srv.AddAPIKeyTenant("key-a", "a"))
	require.NoError(t, e.srv.AddAPIKeyTenant("key-b", "b"))
	as := func(k string) map[string]string { return map[string]string{headerAPIKey: k} }
	body := validCreate()
	r := e.call("POST", "/v1/sandboxes", body, as("key-a"))
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	id := r.JSON(t)["id"].(string)
	r = e.call("POST", "/v1/sandboxes/"+id+"/snapshots", nil, as("key-a"))
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
	sid := r.JSON(t)["id"].(string)
	e.waitSnapshot(sid)

	assert.Equal(t, http.StatusNotFound, e.call("POST", "/v1/sandboxes/"+id+"/snapshots", nil, as("key-b")).Status)
	assert.Equal(t, http.StatusNotFound, e.call("GET", "/v1/snapshots/"+sid, nil, as("key-b")).Status)
	assert.Equal(t, http.StatusNotFound, e.call("DELETE", "/v1/snapshots/"+sid, nil, as("key-b")).Status)
	assert.Empty(t, e.call("GET", "/v1/snapshots", nil, as("key-b")).JSON(t)["items"])
	r = e.call("POST", "/v1/sandboxes", restoreBody(sid), as("key-b"))
	assert.Equal(t, http.StatusNotFound, r.Status)
	assert.Equal(t, "SNAPSHOT::NOT_FOUND", r.JSON(t)["code"])
	assert.Len(t, e.call("GET", "/v1/snapshots", nil, as("key-a")).JSON(t)["items"], 1)
	assert.Equal(t, http.StatusAccepted, e.call("POST", "/v1/sandboxes", restoreBody(sid), as("key-a")).Status)
}

// TestRealRuntimeSnapshotRestore: files a command wrote in /workspace, /tmp,
// /root and /var come back in a sandbox restored from the snapshot, with
// their permission bits; a link planted to a host file is not followed.
func TestRealRuntimeSnapshotRestore(t *testing.T) {
	srv, _ := realEnv(t)
	id, base := createSandbox(t, srv, validCreate())
	_, code := runCommand(t, base, "echo data > /workspace/out.csv && mkdir -p /tmp/d && printf x > /tmp/d/f && echo hi > /root/.note && "+
		"echo v > /var/tmp/v && printf '#!/bin/sh\\necho ran\\n' > /workspace/run.sh && chmod 750 /workspace/run.sh && ln -s /etc/hostname /workspace/link")
	require.NotNil(t, code)
	require.Equal(t, 0, *code)
	status, m := apiDo(t, srv, "POST", "/v1/sandboxes/"+id+"/snapshots", map[string]any{"name": "mid"})
	require.Equal(t, http.StatusAccepted, status, "%v", m)
	sid := m["id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, m = apiDo(t, srv, "GET", "/v1/snapshots/"+sid, nil)
		if st := m["status"].(map[string]any)["state"]; st != "Creating" || time.Now().After(deadline) {
			require.Equal(t, "Ready", st, "%v", m)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	rid, rbase := createSandbox(t, srv, restoreBody(sid))
	out, code := runCommand(t, rbase, "cat /workspace/out.csv /tmp/d/f /root/.note /var/tmp/v; echo; /workspace/run.sh; stat -c %a /workspace/run.sh; test -e /workspace/link && echo link || echo nolink")
	require.NotNil(t, code)
	assert.Equal(t, "dataxhivran750nolink", strings.Join(strings.Fields(strings.Join(out, "")), ""), "restored sandbox %s", rid)
	status, m = apiDo(t, srv, "GET", "/v1/sandboxes/"+rid, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, sid, m["snapshotId"])
	status, _ = apiDo(t, srv, "DELETE", "/v1/snapshots/"+sid, nil)
	assert.Equal(t, http.StatusNoContent, status)
}

// The snapshots together never hold more than the server's budget: a
// capture that would pass it fails, and a deleted snapshot gives its bytes back.
func TestSnapshotsBudget(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	dir := e.srv.lookup(id).rt.Dir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "workspace", "a.bin"), make([]byte, 1000), 0o666))
	require.NoError(t, os.Chmod(filepath.Join(dir, "workspace", "a.bin"), 0o666))
	e.srv.snaps.mu.Lock()
	e.srv.snaps.bytes = snapshotBudget - 999 // as if other snapshots held the rest
	e.srv.snaps.mu.Unlock()
	r := e.call("POST", "/v1/sandboxes/"+id+"/snapshots", nil, nil)
	require.Equal(t, http.StatusAccepted, r.Status)
	m := e.waitSnapshot(r.JSON(t)["id"].(string))
	st := m["status"].(map[string]any)
	assert.Equal(t, "Failed", st["state"])
	assert.Contains(t, st["message"], "delete one first")
	e.srv.snaps.mu.Lock()
	assert.Equal(t, int64(snapshotBudget-999), e.srv.snaps.bytes, "a failed capture gives its bytes back")
	e.srv.snaps.bytes = 0
	e.srv.snaps.mu.Unlock()

	r = e.call("POST", "/v1/sandboxes/"+id+"/snapshots", nil, nil)
	sid := r.JSON(t)["id"].(string)
	require.Equal(t, "Ready", e.waitSnapshot(sid)["status"].(map[string]any)["state"])
	e.srv.snaps.mu.Lock()
	assert.Equal(t, int64(1000), e.srv.snaps.bytes)
	e.srv.snaps.mu.Unlock()
	fi, err := os.Stat(filepath.Join(e.srv.snapshotRoot(), sid, "workspace", "a.bin"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o666), fi.Mode().Perm(), "the permission bits survive the umask")
	require.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/snapshots/"+sid, nil, nil).Status)
	e.srv.snaps.mu.Lock()
	assert.Equal(t, int64(0), e.srv.snaps.bytes)
	e.srv.snaps.mu.Unlock()
}
