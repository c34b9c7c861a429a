package mockserver

import (
	"net/http"
	"os"
	"path/filepath"
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
	status, m = create(map[string]any{"name": "x", "mountPath": "/x"})
	assert.Equal(t, http.StatusUnprocessableEntity, status, "no backend: %v", m)
	srv.cfg.AllowedHostPaths = nil
	status, m = create(map[string]any{"name": "x", "host": map[string]any{"path": allowed}, "mountPath": "/x"})
	assert.Equal(t, http.StatusBadRequest, status, "empty allow list: %v", m)
	assert.Equal(t, "VOLUME::HOST_PATH_NOT_ALLOWED", m["code"])
}
