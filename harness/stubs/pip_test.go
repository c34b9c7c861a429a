package stubs

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wheelsDir is $OSB_WHEELS_DIR, else <repo>/.cache/wheels (filled by make deps).
func wheelsDir() string {
	if d := os.Getenv("OSB_WHEELS_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", ".cache", "wheels")
}

// pipIndex skips (with the observed reason) unless python3 -m pip works and
// the wheels dir has tabulate.
func pipIndex(t *testing.T) *PackageIndex {
	t.Helper()
	if pipPython() == "" {
		out, err := exec.Command("python3", "-m", "pip", "--version").CombinedOutput()
		t.Skipf("python3 -m pip not available (tried python3, /usr/bin/python3): %v: %s", err, strings.TrimSpace(string(out)))
	}
	idx, err := NewPackageIndex(wheelsDir())
	require.NoError(t, err)
	t.Cleanup(func() { idx.Close() })
	if !idx.Has("tabulate") {
		_, reason := idx.Available()
		t.Skipf("no tabulate distribution in %s (%s); run `make deps`", wheelsDir(), reason)
	}
	return idx
}

// pipPython is the first of python3 (PATH) and /usr/bin/python3 with pip.
func pipPython() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-m", "pip", "--version").Run() == nil {
			return py
		}
	}
	return ""
}

// pipEnv is a clean environment: no user pip config, no proxies, no find-links.
func pipEnv(t *testing.T) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LANG=C.UTF-8", "PIP_CONFIG_FILE=/dev/null",
		"PIP_NO_INPUT=1", "PIP_DISABLE_PIP_VERSION_CHECK=1"}
}

func runPip(t *testing.T, args ...string) (string, string) {
	t.Helper()
	dest := t.TempDir()
	base := []string{"-m", "pip", "--isolated", "download", "--no-deps", "--no-cache-dir", "--timeout", "15",
		"--retries", "0", "-d", dest}
	cmd := exec.Command(pipPython(), append(base, args...)...)
	cmd.Env = pipEnv(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pip output:\n%s", out)
	return dest, string(out)
}

// pip accepts the stub as a PEP 503 index (loopback URL, links on the same server).
func TestPipDownloadsFromStub(t *testing.T) {
	idx := pipIndex(t)
	dest, out := runPip(t, "--index-url", idx.SimpleURL(), "--trusted-host", "127.0.0.1", "tabulate==0.9.0")
	assert.FileExists(t, filepath.Join(dest, "tabulate-0.9.0-py3-none-any.whl"), out)
	paths := map[string]bool{}
	for _, r := range idx.Requests() {
		paths[r.Path] = true
	}
	assert.True(t, paths["/simple/tabulate/"])
	assert.True(t, paths["/packages/tabulate-0.9.0-py3-none-any.whl"])
}

// pip reaching the stub by hostname through a forwarding gateway (here an
// HTTP proxy that maps every host to the stub and never dials anything
// else; it refuses CONNECT). The index is asked for as pypi.org and the
// file as files.pythonhosted.org, with the original Host header.
func TestPipThroughHostForwardingGateway(t *testing.T) {
	idx := pipIndex(t)
	target, err := url.Parse(idx.URL())
	require.NoError(t, err)
	var mu sync.Mutex
	seen := map[string]bool{}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
		pr.Out.Host = pr.In.Host // original Host header, as the gateway forwards it
		pr.Out.Header.Set("X-Forwarded-Proto", "http")
	}}
	gw, err := startServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.ToLower(r.Host)
		if h, _, ok := strings.Cut(host, ":"); ok {
			host = h
		}
		mu.Lock()
		seen[host] = true
		mu.Unlock()
		if r.Method == http.MethodConnect || (host != PyPIHost && host != FilesHost) {
			http.Error(w, "denied by test gateway", http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	require.NoError(t, err)
	defer gw.Close()

	dest, out := runPip(t, "--proxy", gw.URL(), "--index-url", "http://pypi.org/simple/",
		"--trusted-host", "pypi.org", "--trusted-host", "files.pythonhosted.org", "tabulate==0.9.0")
	assert.FileExists(t, filepath.Join(dest, "tabulate-0.9.0-py3-none-any.whl"), out)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]bool{PyPIHost: true, FilesHost: true}, seen)
	hosts := map[string]bool{}
	for _, r := range idx.Requests() {
		hosts[r.Host] = true
	}
	assert.True(t, hosts[PyPIHost] && hosts[FilesHost], "%v", hosts)
}

// An unknown project is a 404 from the index (pip: "No matching
// distribution"), which is how a subject tells "package does not exist"
// from a policy denial.
func TestPipUnknownProjectIs404(t *testing.T) {
	idx := pipIndex(t)
	cmd := exec.Command(pipPython(), "-m", "pip", "--isolated", "download", "--no-deps", "--no-cache-dir",
		"--retries", "0", "-d", t.TempDir(), "--index-url", idx.SimpleURL(), "--trusted-host", "127.0.0.1",
		"no-such-package-osb")
	cmd.Env = pipEnv(t)
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "No matching distribution found")
}
