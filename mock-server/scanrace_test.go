package mockserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// swapScript swaps, as fast as it can, K directories with symbolic links to a
// host directory and K regular files with FIFOs (renameat2 RENAME_EXCHANGE),
// so that a final scan that follows paths the sandbox controls either records
// host files or blocks on a FIFO.
const swapScript = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
host, k = sys.argv[1], int(sys.argv[2])
os.chdir('/workspace')
with open('keep.txt', 'w') as f: f.write('keep me')
for i in range(k):
    os.mkdir('d%d' % i)
    for j in range(20):
        with open('d%d/f%d' % (i, j), 'w') as f: f.write('x' * 100)
    os.symlink(host, 's%d' % i)
    with open('f%d' % i, 'w') as f: f.write('y' * 100)
    os.mkfifo('p%d' % i)
open('ready', 'w').close()
names = [(b'd%d' % i, b's%d' % i, b'f%d' % i, b'p%d' % i) for i in range(k)]
while True:
    for d, s, f, p in names:
        libc.renameat2(-100, d, -100, s, 2)
        libc.renameat2(-100, f, -100, p, 2)
`

// TestFinalScanNeverFollowsSandboxPaths: a sandbox that keeps swapping its
// directories for links to a host directory (0700, with files) and its files
// for FIFOs gets no host file into the final manifest, and DELETE returns
// within 5 s with its processes, namespace and directory gone. The soak
// (OSB_SCAN_RACE_ATTEMPTS=200) is the done-when figure.
func TestFinalScanNeverFollowsSandboxPaths(t *testing.T) {
	srv, _ := realEnv(t)
	if ok, _ := srv.cfg.Runtime.Isolation(); !ok {
		t.Skip("not measured: the race needs the namespaced runtime (isolation not enforced here)")
	}
	srv.SetCanaries(map[string]string{"host-secret": "never-in-the-sandbox"})
	host := t.TempDir()
	require.NoError(t, os.Chmod(host, 0o700))
	secretSums := map[string]bool{}
	for i := 0; i < 30; i++ {
		content := fmt.Sprintf("host secret %d", i)
		require.NoError(t, os.WriteFile(filepath.Join(host, fmt.Sprintf("hostsecret-%d", i)), []byte(content), 0o600))
		sum := sha256.Sum256([]byte(content))
		secretSums[hex.EncodeToString(sum[:])] = true
	}
	attempts := 3
	if v, err := strconv.Atoi(os.Getenv("OSB_SCAN_RACE_ATTEMPTS")); err == nil && v > 0 {
		attempts = v
	}
	var worst time.Duration
	for a := 0; a < attempts; a++ {
		id, base := createSandbox(t, srv, validCreate())
		require.NoError(t, os.WriteFile(filepath.Join(srv.lookup(id).rt.Dir(), "tmp", "swap.py"), []byte(swapScript), 0o644))
		body, _ := json.Marshal(map[string]any{"command": "python3 /tmp/swap.py " + host + " 8", "background": true})
		res, err := http.Post(base+"/command", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		_, code := runCommand(t, base, "for i in $(seq 100); do [ -e /workspace/ready ] && exit 0; sleep 0.1; done; exit 1")
		require.NotNil(t, code)
		require.Equal(t, 0, *code, "the swapping script started")
		rtsb := srv.lookup(id).rt
		dir := rtsb.Dir()

		start := time.Now()
		req, _ := http.NewRequest("DELETE", srv.URL()+"/v1/sandboxes/"+id, nil)
		req.Header.Set(headerAPIKey, testKey)
		res, err = (&http.Client{Timeout: 15 * time.Second}).Do(req)
		took := time.Since(start)
		require.NoError(t, err, "attempt %d: DELETE did not answer within 15 s", a)
		res.Body.Close()
		require.Equal(t, http.StatusNoContent, res.StatusCode)
		worst = max(worst, took)
		require.LessOrEqual(t, took, 5*time.Second, "attempt %d: DELETE took %s", a, took)
		assert.Empty(t, rtsb.Pids(), "attempt %d: no process survives", a)
		assert.NoDirExists(t, dir)

		kept := false
		for _, ev := range srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindFile}) {
			f := ev.File
			if f.Op != "final-manifest" {
				continue
			}
			require.NotContains(t, f.Path, "hostsecret", "attempt %d: a host file reached the audit", a)
			require.False(t, secretSums[f.SHA256], "attempt %d: a host file's hash reached the audit (%s)", a, f.Path)
			if f.Path == "/workspace/keep.txt" {
				sum := sha256.Sum256([]byte("keep me"))
				kept = f.SHA256 == hex.EncodeToString(sum[:])
			}
		}
		assert.True(t, kept, "attempt %d: the sandbox's own file is in the manifest with its hash", a)
		for _, ev := range srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCanary}) {
			assert.False(t, strings.Contains(ev.Canary.Where, "hostsecret"), "attempt %d: canary scan read a host file", a)
		}
	}
	t.Logf("%d attempts: no host path in the audit; slowest DELETE %s", attempts, worst)
}
