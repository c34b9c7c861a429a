package egress

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests check that real clients (Debian's python3 ssl and pip, curl)
// accept the hub CA and work through the sidecar. They never use real DNS:
// clients either go through the sidecar proxy (the proxy gets the name) or
// are told where to connect (curl --connect-to). Skipped when a client is
// not installed.

func requireBinary(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath(path); err != nil {
		t.Skipf("not measured: %s not installed (%v)", path, err)
	}
}

func isolatedEnv(t *testing.T) []string {
	home := t.TempDir()
	return []string{"PATH=/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8", "PIP_CONFIG_FILE=" + os.DevNull,
		"PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_CACHE_DIR=1", "PIP_NO_INPUT=1"}
}

func TestRealPythonTrustsBundleThroughProxy(t *testing.T) {
	requireBinary(t, "/usr/bin/python3")
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"}})
	script := `import ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
op = urllib.request.build_opener(urllib.request.ProxyHandler({"https": sys.argv[1], "http": sys.argv[1]}), urllib.request.HTTPSHandler(context=ctx))
print(op.open("https://pypi.org/simple/", timeout=10).read().decode())
try:
    op.open("https://exfil.test/", timeout=10)
except Exception as ex:
    print("DENIED:", ex)
`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-c", script, "http://"+e.sc.ProxyAddr(), e.hub.CABundlePath())
	cmd.Env = isolatedEnv(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "stub pypi.org host=pypi.org path=/simple/")
	assert.Contains(t, string(out), "DENIED:")
	assert.Contains(t, string(out), "403")
}

func TestRealPipReadsStubIndexThroughProxy(t *testing.T) {
	requireBinary(t, "/usr/bin/python3")
	if err := exec.Command("/usr/bin/python3", "-m", "pip", "--version").Run(); err != nil {
		t.Skipf("not measured: Debian pip not available: %v", err)
	}
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/fakepkg/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!DOCTYPE html><html><body>
<a href="https://files.pythonhosted.org/packages/fakepkg-1.0-py3-none-any.whl#sha256=00">fakepkg-1.0-py3-none-any.whl</a>
<a href="https://files.pythonhosted.org/packages/fakepkg-1.2-py3-none-any.whl#sha256=00">fakepkg-1.2-py3-none-any.whl</a>
</body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer index.Close()
	dir, err := os.MkdirTemp("", "egp")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	rec := &recorder{}
	hub, err := NewHub(HubConfig{Upstreams: map[string]string{"pypi.org": index.URL}, StateDir: dir, Audit: rec})
	require.NoError(t, err)
	defer hub.Close()
	p, _ := ParsePolicy([]byte(pypiPolicy))
	att, err := hub.Attach("sbx-pip", p, false)
	require.NoError(t, err)
	e := &env{hub: hub, att: att, rec: rec}
	e.sc = startSidecar(t, att)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", "-m", "pip", "index", "versions", "fakepkg",
		"--index-url", "https://pypi.org/simple/", "--proxy", "http://"+e.sc.ProxyAddr(), "--cert", hub.CABundlePath())
	cmd.Env = isolatedEnv(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "fakepkg (1.2)")

	// The same under a deny override fails (pip reports "No matching
	// distribution"; the proxy answered 403) and the denial is audited.
	require.NoError(t, hub.SetDenyOverride([]string{"pypi.org"}))
	cmd = exec.CommandContext(ctx, "/usr/bin/python3", "-m", "pip", "index", "versions", "fakepkg", "--retries", "0",
		"--index-url", "https://pypi.org/simple/", "--proxy", "http://"+e.sc.ProxyAddr(), "--cert", hub.CABundlePath())
	cmd.Env = isolatedEnv(t)
	out, err = cmd.CombinedOutput()
	assert.Error(t, err, string(out))
	assert.NotContains(t, string(out), "fakepkg (1.2)")
	denied := 0
	for _, ev := range rec.egress("pypi.org") {
		if ev.Decision == "deny" {
			denied++
			assert.Equal(t, "override:pypi.org", ev.Rule)
			assert.Equal(t, "proxy", ev.Phase)
		}
	}
	assert.GreaterOrEqual(t, denied, 1)
}

func TestRealCurlThroughRelay(t *testing.T) {
	requireBinary(t, "curl")
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"}})
	_, httpsPort := splitPort(t, e.sc.HTTPSAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "curl", "-sS", "--noproxy", "*", "--cacert", e.hub.CABundlePath(),
		"--connect-to", "pypi.org:443:127.0.0.1:"+httpsPort, "https://pypi.org/simple/")
	cmd.Env = isolatedEnv(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "stub pypi.org host=pypi.org path=/simple/", string(out))
}
