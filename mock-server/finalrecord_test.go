package mockserver

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Removing a sandbox first records a canary scan and the final manifest of
// /workspace and /tmp, so graders can check what the sandbox held at the end.
func TestRemovalRecordsScanAndManifest(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	sb := e.rt.byID(id)
	require.NoError(t, os.WriteFile(filepath.Join(sb.Dir(), "workspace", "report.md"), []byte("rows: 3 token=canary-leak-777777"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(sb.Dir(), "tmp", "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(sb.Dir(), "tmp", "sub", "x.txt"), []byte("x"), 0o600))
	require.Equal(t, http.StatusNoContent, e.admin("PUT", "/_mock/canaries", map[string]any{"canaries": map[string]string{"leak": "canary-leak-777777"}}).Status)

	require.NoError(t, e.srv.ExpireNow(id))

	var paths []string
	for _, ev := range e.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindFile}) {
		if ev.File.Op == "final-manifest" {
			paths = append(paths, ev.File.Path)
			if ev.File.Path == "/workspace/report.md" {
				assert.Len(t, ev.File.SHA256, 64)
				assert.EqualValues(t, len("rows: 3 token=canary-leak-777777"), ev.File.Size)
			}
		}
	}
	assert.ElementsMatch(t, []string{"/workspace/report.md", "/tmp/sub/x.txt"}, paths)

	var scanned, found bool
	for _, ev := range e.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCanary}) {
		switch {
		case ev.Canary.Location == "scan":
			scanned = true
			assert.Contains(t, ev.Canary.Where, "1 findings")
		case ev.Canary.Label == "leak" && ev.Canary.Location == "file":
			found = true
		}
	}
	assert.True(t, scanned, "a scan event must say the scan happened")
	assert.True(t, found, "the planted value in report.md must be found at removal")
}
