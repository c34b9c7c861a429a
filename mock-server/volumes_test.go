package mockserver

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostPathVolumes: a host directory under the allow list is mounted at
// mountPath (read-only when asked); paths outside it, symbolic links out of
// it, reserved mount paths and other backends are client errors.
func TestHostPathVolumes(t *testing.T) {
	srv, _ := realEnv(t)
	if ok, _ := srv.cfg.Runtime.Isolation(); !ok {
		t.Skip("not measured: volumes need the isolating runtime")
	}
	allowed, outside := t.TempDir(), t.TempDir()
	srv.cfg.AllowedHostPaths = []string{allowed}
	require.NoError(t, os.WriteFile(filepath.Join(allowed, "in.txt"), []byte("from the host"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(allowed, "escape")))

	create := func(vols ...map[string]any) (int, map[string]any) {
		body := validCreate()
		body["volumes"] = vols
		return apiDo(t, srv, "POST", "/v1/sandboxes", body)
	}
	status, m := create(map[string]any{"name": "data", "host": map[string]any{"path": allowed}, "mountPath": "/data", "readOnly": true},
		map[string]any{"name": "out", "host": map[string]any{"path": allowed}, "subPath": "rw", "mountPath": "/workspace/out"})
	require.Equal(t, http.StatusAccepted, status, "%v", m)
	id := m["id"].(string)
	_, ep := apiDo(t, srv, "GET", "/v1/sandboxes/"+id+"/endpoints/44772", nil)
	base := "http://" + ep["endpoint"].(string)
	out, code := runCommand(t, base, "cat /data/in.txt; echo; (echo x > /data/new) 2>/dev/null || echo read-only; echo written > /workspace/out/f && echo rw-ok")
	require.NotNil(t, code)
	assert.Equal(t, []string{"from the host", "read-only", "rw-ok"}, out)
	b, err := os.ReadFile(filepath.Join(allowed, "rw", "f"))
	require.NoError(t, err, "the read-write volume (created subPath) reached the host directory")
	assert.Equal(t, "written\n", string(b))

	for name, c := range map[string]struct {
		vol  map[string]any
		code string
	}{
		"outside the allow list":    {map[string]any{"name": "x", "host": map[string]any{"path": outside}, "mountPath": "/x"}, "VOLUME::HOST_PATH_NOT_ALLOWED"},
		"symlink out of it":         {map[string]any{"name": "x", "host": map[string]any{"path": allowed}, "subPath": "escape", "mountPath": "/x"}, "VOLUME::HOST_PATH_NOT_ALLOWED"},
		"subPath traversal":         {map[string]any{"name": "x", "host": map[string]any{"path": allowed}, "subPath": "../x", "mountPath": "/x"}, "VOLUME::INVALID_SUB_PATH"},
		"relative host path":        {map[string]any{"name": "x", "host": map[string]any{"path": "data"}, "mountPath": "/x"}, "VOLUME::INVALID_HOST_PATH"},
		"reserved mount path":       {map[string]any{"name": "x", "host": map[string]any{"path": allowed}, "mountPath": "/.osb"}, "VOLUME::INVALID_MOUNT_PATH"},
		"relative mount path":       {map[string]any{"name": "x", "host": map[string]any{"path": allowed}, "mountPath": "x"}, "VOLUME::INVALID_MOUNT_PATH"},
		"bad name":                  {map[string]any{"name": "Data_1", "host": map[string]any{"path": allowed}, "mountPath": "/x"}, "VOLUME::INVALID_NAME"},
		"pvc without a volume root": {map[string]any{"name": "x", "pvc": map[string]any{"claimName": "c"}, "mountPath": "/x"}, "VOLUME::UNSUPPORTED_BACKEND"},
		"ossfs backend":             {map[string]any{"name": "x", "ossfs": map[string]any{"bucket": "b"}, "mountPath": "/x"}, "VOLUME::UNSUPPORTED_BACKEND"},
	} {
		status, m := create(c.vol)
		assert.Equal(t, http.StatusBadRequest, status, "%s: %v", name, m)
		assert.Equal(t, c.code, m["code"], name)
	}
	// a link in the allowed directory never makes the server create anything outside it
	status, m = create(map[string]any{"name": "x", "host": map[string]any{"path": allowed}, "subPath": "escape/made/deeper", "mountPath": "/x"})
	assert.Equal(t, http.StatusBadRequest, status, "%v", m)
	assert.Equal(t, "VOLUME::HOST_PATH_NOT_ALLOWED", m["code"])
	_, err = os.Stat(filepath.Join(outside, "made"))
	assert.True(t, os.IsNotExist(err), "a directory was created outside the allowed path through a link")
	status, m = create(map[string]any{"name": "x", "mountPath": "/x"})
	assert.Equal(t, http.StatusUnprocessableEntity, status, "no backend: %v", m)
	srv.cfg.AllowedHostPaths = nil
	status, m = create(map[string]any{"name": "x", "host": map[string]any{"path": allowed}, "mountPath": "/x"})
	assert.Equal(t, http.StatusBadRequest, status, "empty allow list: %v", m)
	assert.Equal(t, "VOLUME::HOST_PATH_NOT_ALLOWED", m["code"])
}

// TestNamedVolumes: pvc volumes are named volumes shared between sandboxes
// (what one writes, another reads), readOnly refuses writes, subPath
// confines the mount to a subdirectory (and a link a sandbox plants cannot
// lead another sandbox's subPath out of the volume), a missing volume is
// created unless createIfNotExists is false, deleteOnSandboxTermination
// removes only a volume the request created, once unused, and claimName is
// validated. No descriptor of the volume reaches the sandbox.
func TestNamedVolumes(t *testing.T) {
	srv, _ := realEnv(t)
	if ok, _ := srv.cfg.Runtime.Isolation(); !ok {
		t.Skip("not measured: volumes need the isolating runtime")
	}
	root := t.TempDir()
	srv.cfg.VolumeRoot = root
	require.NoError(t, os.MkdirAll(filepath.Join(root, "shared", "datasets", "train"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "shared", "marker.txt"), []byte("pvc-marker-data\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "shared", "datasets", "train", "marker.txt"), []byte("pvc-subpath-marker\n"), 0o644))

	create := func(vols ...map[string]any) (int, map[string]any) {
		body := validCreate()
		body["volumes"] = vols
		return apiDo(t, srv, "POST", "/v1/sandboxes", body)
	}
	start := func(vols ...map[string]any) (string, string) {
		t.Helper()
		status, m := create(vols...)
		require.Equal(t, http.StatusAccepted, status, "%v", m)
		id := m["id"].(string)
		_, ep := apiDo(t, srv, "GET", "/v1/sandboxes/"+id+"/endpoints/44772", nil)
		return id, "http://" + ep["endpoint"].(string)
	}
	pvc := func(name, claim, mount string, extra map[string]any) map[string]any {
		v := map[string]any{"name": name, "pvc": map[string]any{"claimName": claim}, "mountPath": mount}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}

	// one sandbox writes through its mount, another reads it through its own
	a, aBase := start(pvc("vol", "shared", "/mnt/pvc-data", nil))
	out, _ := runCommand(t, aBase, "cat /mnt/pvc-data/marker.txt && echo written-by-a > /mnt/pvc-data/from-a.txt && echo ok")
	assert.Equal(t, []string{"pvc-marker-data", "ok"}, out)
	_, bBase := start(pvc("vol", "shared", "/data", map[string]any{"readOnly": true}))
	out, _ = runCommand(t, bBase, "cat /data/from-a.txt; (echo x > /data/should-fail.txt) 2>/dev/null || echo read-only")
	assert.Equal(t, []string{"written-by-a", "read-only"}, out)
	_, err := os.Stat(filepath.Join(root, "shared", "should-fail.txt"))
	assert.True(t, os.IsNotExist(err), "a read-only mount wrote to the volume")
	b, err := os.ReadFile(filepath.Join(root, "shared", "from-a.txt"))
	require.NoError(t, err, "the write reached the volume directory")
	assert.Equal(t, "written-by-a\n", string(b))
	// the descriptors the mounts were made from are closed before sandbox code runs
	out, _ = runCommand(t, bBase, "for f in /proc/self/fd/*; do readlink $f; done")
	for _, l := range out {
		assert.NotContains(t, l, root, "a volume descriptor leaked into the sandbox")
	}

	// subPath: only the subdirectory is visible, writes land in it
	_, cBase := start(pvc("train", "shared", "/mnt/train", map[string]any{"subPath": "datasets/train"}))
	out, _ = runCommand(t, cBase, "cat /mnt/train/marker.txt; ls /mnt/train; echo sub > /mnt/train/out.txt; ls /mnt/train/.. ")
	require.NotEmpty(t, out)
	assert.Equal(t, "pvc-subpath-marker", out[0])
	assert.NotContains(t, out, "datasets")
	assert.NotContains(t, out, "from-a.txt")
	_, err = os.Stat(filepath.Join(root, "shared", "datasets", "train", "out.txt"))
	assert.NoError(t, err, "the subPath write landed in the subdirectory")

	// a link planted by one sandbox cannot take another's subPath out of the volume
	out, _ = runCommand(t, aBase, "ln -s / /mnt/pvc-data/escape && ln -s ../../.. /mnt/pvc-data/up && echo planted")
	require.Equal(t, []string{"planted"}, out)
	for _, sub := range []string{"escape", "escape/etc", "up", "../shared"} {
		status, m := create(pvc("x", "shared", "/x", map[string]any{"subPath": sub}))
		assert.Equal(t, http.StatusBadRequest, status, "%s: %v", sub, m)
		assert.Equal(t, "VOLUME::INVALID_SUB_PATH", m["code"], sub)
	}

	// missing volume: created by default, 400 with createIfNotExists false
	status, m := create(map[string]any{"name": "x", "pvc": map[string]any{"claimName": "absent", "createIfNotExists": false}, "mountPath": "/x"})
	assert.Equal(t, http.StatusBadRequest, status, "%v", m)
	assert.Equal(t, "VOLUME::PVC_NOT_FOUND", m["code"])
	_, err = os.Stat(filepath.Join(root, "absent"))
	assert.True(t, os.IsNotExist(err))
	kept, _ := start(pvc("x", "fresh", "/x", nil))
	_, err = os.Stat(filepath.Join(root, "fresh"))
	require.NoError(t, err, "auto-created")
	temp, tBase := start(map[string]any{"name": "x", "pvc": map[string]any{"claimName": "scratch", "deleteOnSandboxTermination": true}, "mountPath": "/x"})
	temp2, _ := start(map[string]any{"name": "x", "pvc": map[string]any{"claimName": "scratch", "deleteOnSandboxTermination": true}, "mountPath": "/y"})
	out, _ = runCommand(t, tBase, "echo s > /x/s && echo ok")
	assert.Equal(t, []string{"ok"}, out)
	for _, id := range []string{kept, temp} {
		status, _ := apiDo(t, srv, "DELETE", "/v1/sandboxes/"+id, nil)
		require.Equal(t, http.StatusNoContent, status)
	}
	_, err = os.Stat(filepath.Join(root, "fresh"))
	assert.NoError(t, err, "a volume without deleteOnSandboxTermination stays")
	_, err = os.Stat(filepath.Join(root, "scratch", "s"))
	assert.NoError(t, err, "still in use by another sandbox: kept")
	status, _ = apiDo(t, srv, "DELETE", "/v1/sandboxes/"+temp2, nil)
	require.Equal(t, http.StatusNoContent, status)
	_, err = os.Stat(filepath.Join(root, "scratch"))
	assert.True(t, os.IsNotExist(err), "the auto-created volume is removed once unused")
	status, _ = apiDo(t, srv, "DELETE", "/v1/sandboxes/"+a, nil)
	require.Equal(t, http.StatusNoContent, status)
	_, err = os.Stat(filepath.Join(root, "shared", "marker.txt"))
	assert.NoError(t, err, "a pre-existing volume is never removed")

	// claimName: the PVC model's pattern (422), no path in it
	for _, claim := range []any{"../etc", "a/b", "Upper", "-x", "x-", ".", "", strings.Repeat("a", 254), 7} {
		status, m := create(map[string]any{"name": "x", "pvc": map[string]any{"claimName": claim}, "mountPath": "/x"})
		assert.Equal(t, http.StatusUnprocessableEntity, status, "%v: %v", claim, m)
	}
	status, m = create(map[string]any{"name": "x", "pvc": map[string]any{}, "mountPath": "/x"})
	assert.Equal(t, http.StatusUnprocessableEntity, status, "no claimName: %v", m)
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		if e.Name() != volumeRegDir { // the registry (volumereg.go)
			names = append(names, e.Name())
		}
	}
	assert.ElementsMatch(t, []string{"shared", "fresh"}, names, "nothing else appeared in the volume root")
	owned, err := os.ReadDir(filepath.Join(root, volumeRegDir, "owned"))
	require.NoError(t, err)
	assert.Empty(t, owned, "no deletion is pending once the auto-created volume is gone")
}
