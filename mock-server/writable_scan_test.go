package mockserver

import (
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// TestCanaryScanCoversEveryWritablePlace: a sandbox writes a planted value
// into each place it can write — /workspace, /tmp, /root, its private /var,
// /dev/shm, a writable named volume and a writable host volume — and both the
// live scan and the scan at removal find each one, with the path the sandbox
// saw; the final manifest lists them too. A read-only volume is not walked.
// Nothing else in the sandbox's filesystem is writable: / and /dev (outside
// /dev/shm, which is 1777 as Docker's and serves POSIX semaphores) refuse a file.
func TestCanaryScanCoversEveryWritablePlace(t *testing.T) {
	srv, _ := realEnv(t)
	if ok, _ := srv.cfg.Runtime.Isolation(); !ok {
		t.Skip("not measured: /dev/shm and volumes need the isolating runtime")
	}
	srv.cfg.VolumeRoot = t.TempDir()
	hostDir := t.TempDir()
	srv.cfg.AllowedHostPaths = []string{hostDir}
	require.NoError(t, os.WriteFile(filepath.Join(hostDir, "ro.txt"), []byte("canary-writable-424242 already on the host"), 0o644))
	srv.SetCanaries(map[string]string{"planted": "canary-writable-424242"})

	body := validCreate()
	body["volumes"] = []map[string]any{
		{"name": "named", "pvc": map[string]any{"claimName": "scan-vol"}, "mountPath": "/mnt/named"},
		{"name": "host", "host": map[string]any{"path": hostDir}, "subPath": "rw", "mountPath": "/mnt/host"},
		{"name": "ro", "host": map[string]any{"path": hostDir}, "mountPath": "/mnt/ro", "readOnly": true},
	}
	id, base := createSandbox(t, srv, body)
	places := []string{"/workspace/w.txt", "/tmp/t.txt", "/root/.cache/r.txt", "/var/tmp/v.txt", "/dev/shm/s.txt",
		"/mnt/named/n.txt", "/mnt/host/h.txt"}
	cmd := "mkdir -p /root/.cache"
	for _, p := range places {
		cmd += " && echo canary-writable-424242 > " + p
	}
	cmd += " && echo planted; stat -c %a /dev/shm; for p in /dev/x /x /etc/x /usr/x; do (echo x > $p) 2>/dev/null && echo writable:$p; done;" +
		` python3 -c "import multiprocessing as m; l = m.Lock(); l.acquire(); l.release(); print('sem-ok')"`
	out, code := runCommand(t, base, cmd)
	require.NotNil(t, code)
	assert.Equal(t, []string{"planted", "1777", "sem-ok"}, out, "only the writable places took a file; POSIX semaphores work")

	fileFindings := func(fs []wire.Canary) []string {
		var w []string
		for _, f := range fs {
			if f.Location == "file" && f.Label == "planted" {
				w = append(w, f.Where)
			}
		}
		sort.Strings(w)
		return w
	}
	want := append([]string(nil), places...)
	sort.Strings(want)

	live, err := srv.CanaryScan(id)
	require.NoError(t, err)
	assert.Equal(t, want, fileFindings(live), "the live scan finds the value in every writable place, and not in the read-only volume")

	status, _ := apiDo(t, srv, "DELETE", "/v1/sandboxes/"+id, nil)
	require.Equal(t, http.StatusNoContent, status)
	var atRemoval []wire.Canary
	manifest := map[string]bool{}
	for _, ev := range srv.AuditQuery(audit.Query{SandboxID: id}) {
		switch {
		case ev.Kind == wire.KindCanary && ev.Canary != nil:
			atRemoval = append(atRemoval, *ev.Canary)
		case ev.Kind == wire.KindFile && ev.File != nil && ev.File.Op == "final-manifest":
			manifest[ev.File.Path] = true
		}
	}
	// the live scan's events are in the audit too; each place is found at least once, nowhere else
	got := map[string]bool{}
	for _, w := range fileFindings(atRemoval) {
		got[w] = true
	}
	assert.Len(t, got, len(places))
	for _, p := range places {
		assert.True(t, got[p], "%s found", p)
		assert.True(t, manifest[p], "%s in the final manifest", p)
	}
	assert.False(t, manifest["/mnt/ro/ro.txt"], "a read-only volume is not part of the sandbox's writable places")
}
