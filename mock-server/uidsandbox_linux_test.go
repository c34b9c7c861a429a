//go:build linux

package mockserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/internal/uidtest"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// realInsecureEnv is the server on the real runtime in insecure mode, as
// root, with a state directory other uids can traverse: its sandboxes run
// as uids of their own.
func realInsecureEnv(t *testing.T) *Server {
	t.Helper()
	rt, base := uidtest.Runtime(t)
	srv, err := New(Config{APIKey: testKey, AdminToken: testAdmin, StateDir: filepath.Join(base, "state"), Runtime: rt})
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func TestInsecureServerSandboxesRunAsTheirOwnUIDs(t *testing.T) {
	srv := realInsecureEnv(t)
	secretDir := t.TempDir() // 0700 root: the grader's
	secret := filepath.Join(secretDir, "key")
	require.NoError(t, os.WriteFile(secret, []byte("grader-secret"), 0o600))
	open := filepath.Join(filepath.Dir(srv.cfg.StateDir), "bundles")
	require.NoError(t, os.Mkdir(open, 0o755)) // a root directory the sandbox can reach
	body := validCreate()
	body["entrypoint"] = []string{"sh", "-c", "id -u > entry.uid; (cd / && setsid sleep 1000 </dev/null >/dev/null 2>&1 &); exec sleep 1000"}
	id1, base1 := createSandbox(t, srv, body)
	_, base2 := createSandbox(t, srv, validCreate())

	var entry []string
	require.Eventually(t, func() bool {
		entry, _ = runCommand(t, base1, "cat entry.uid 2>/dev/null")
		return len(entry) == 1
	}, 10*time.Second, 50*time.Millisecond, "the entrypoint never wrote its uid")
	out, code := runCommand(t, base1, fmt.Sprintf(
		"id -u; cat %s 2>/dev/null || echo noread; touch %s/forged 2>/dev/null && echo wrote || echo nowrite; kill -0 %d 2>/dev/null && echo signalled || echo nosignal",
		secret, open, os.Getpid()))
	require.NotNil(t, code)
	require.Len(t, out, 4, "%q", out)
	uid1 := out[0]
	n, err := strconv.Atoi(uid1)
	require.NoError(t, err)
	require.True(t, n >= runtime.SandboxUIDBase && n < runtime.SandboxUIDBase+runtime.SandboxUIDCount, "uid %d", n)
	require.Equal(t, uid1, entry[0], "the entrypoint runs as the sandbox's uid")
	require.Equal(t, []string{"noread", "nowrite", "nosignal"}, out[1:])
	_, err = os.Stat(filepath.Join(open, "forged"))
	require.True(t, os.IsNotExist(err), "the sandbox wrote into a root directory")

	out2, _ := runCommand(t, base2, "id -u")
	require.Len(t, out2, 1)
	require.NotEqual(t, uid1, out2[0], "two sandboxes share a uid")
	require.NotEqual(t, "0", out2[0])

	require.GreaterOrEqual(t, len(uidtest.Procs(n)), 3, "agent, entrypoint and the setsid sleep run as the uid")
	status, m := apiDo(t, srv, "DELETE", "/v1/sandboxes/"+id1, nil)
	require.Equal(t, 204, status, "%v", m)
	require.Eventually(t, func() bool { return len(uidtest.Procs(n)) == 0 }, 10*time.Second, 50*time.Millisecond,
		"processes of uid %s left after delete: %v", uid1, uidtest.Procs(n))
}
