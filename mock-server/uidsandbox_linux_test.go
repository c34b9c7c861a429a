//go:build linux

package mockserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/egress"
	"github.com/osb-capstone/acceptance/mock-server/internal/uidtest"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// realInsecureEnv is the server on the real runtime in insecure mode, as
// root, with a state directory other uids can traverse: its sandboxes run
// as uids of their own. With upstreams it has an egress hub that maps those
// hosts to them (nil: no hub).
func realInsecureEnv(t *testing.T, upstreams map[string]string, opts ...envOption) *Server {
	t.Helper()
	rt, base := uidtest.Runtime(t)
	dir := filepath.Join(base, "state")
	cfg := Config{APIKey: testKey, AdminToken: testAdmin, StateDir: dir, Runtime: rt}
	for _, o := range opts {
		o(&cfg)
	}
	var srv *Server
	if upstreams != nil {
		hub, err := egress.NewHub(egress.HubConfig{StateDir: dir, Upstreams: upstreams, Audit: audit.RecorderFunc(func(ev wire.Event) {
			if srv != nil {
				srv.Recorder().Record(ev)
			}
		})})
		require.NoError(t, err)
		t.Cleanup(func() { _ = hub.Close() })
		cfg.Egress = EgressAdapter{Hub: hub}
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func TestInsecureServerSandboxesRunAsTheirOwnUIDs(t *testing.T) {
	srv := realInsecureEnv(t, nil)
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

// insecureEgressWheel is the wheel the stub index serves: the one `make
// deps` puts in .cache/wheels for the harness's stub index (OSB_WHEELS_DIR
// overrides the directory).
func insecureEgressWheel(t *testing.T) []byte {
	t.Helper()
	dir := os.Getenv("OSB_WHEELS_DIR")
	if dir == "" {
		dir = filepath.Join("..", ".cache", "wheels")
	}
	b, err := os.ReadFile(filepath.Join(dir, "tabulate-0.9.0-py3-none-any.whl"))
	if err != nil {
		t.Skipf("not measured: no tabulate wheel (run `make deps`): %v", err)
	}
	if out, err := exec.Command("/usr/bin/python3", "-m", "pip", "--version").CombinedOutput(); err != nil {
		t.Skipf("not measured: Debian's python3 -m pip is not available: %v: %s", err, out)
	}
	return b
}

// TestInsecureSandboxInstallsThroughTheEgressGateway: in insecure mode as
// root (the grader's uid level, e.g. Gradescope) a sandbox has no network
// namespace and so no sidecar. Its networkPolicy is still served by its
// egress gateway, through a loopback proxy the server gives it in
// HTTP(S)_PROXY: the reference pipeline's `pip install tabulate` reaches
// the stub index (pypi.org and files.pythonhosted.org mapped to it, the
// hub CA trusted through PIP_CERT), and a host the policy denies is refused
// by the gateway, recorded, and never dialled. The proxy answers only with
// the sandbox's own credentials, and /_mock/info says egress is enforced at
// the proxy only. (Before, the sandbox got a gateway socket it could not
// use, and pip went nowhere: an honest submission failed M2.)
func TestInsecureSandboxInstallsThroughTheEgressGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("real runtime: skipped in -short mode")
	}
	wheel := insecureEgressWheel(t)
	sum := sha256.Sum256(wheel)
	var indexHits atomic.Int32
	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		indexHits.Add(1)
		switch r.URL.Path {
		case "/simple/tabulate/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="https://files.pythonhosted.org/packages/tabulate-0.9.0-py3-none-any.whl#sha256=%s">tabulate-0.9.0-py3-none-any.whl</a></body></html>`,
				hex.EncodeToString(sum[:]))
		case "/packages/tabulate-0.9.0-py3-none-any.whl":
			_, _ = w.Write(wheel)
		default:
			http.NotFound(w, r)
		}
	}))
	defer index.Close()
	var sinkHits atomic.Int32
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sinkHits.Add(1) }))
	defer sink.Close()

	srv := realInsecureEnv(t, map[string]string{"pypi.org": index.URL, "files.pythonhosted.org": index.URL, "exfil.capstone.test": sink.URL})
	dir := srv.cfg.StateDir
	assert.Equal(t, "proxy", srv.Info().EgressEnforcement, "without a network namespace egress is enforced at the proxy only")

	body := validCreate()
	body["networkPolicy"] = map[string]any{"defaultAction": "deny", "egress": []map[string]string{
		{"action": "allow", "target": "pypi.org"}, {"action": "allow", "target": "files.pythonhosted.org"}}}
	id, execd := createSandbox(t, srv, body)

	// Its environment points clients at the loopback proxy. Checked first:
	// without it a plain process uses the host's network and resolver, and
	// on a machine with network pip would reach the real index (measured:
	// it installed the real tabulate 0.10.0), so nothing below runs then.
	env, _ := runCommand(t, execd, `printf '%s\n' "$HTTPS_PROXY" "$https_proxy" "$NO_PROXY" "$PIP_CERT"`)
	require.Len(t, env, 4, "%q", env)
	require.Regexp(t, `^http://osb:[0-9a-f]+@127\.0\.0\.1:[0-9]+$`, env[0], "HTTPS_PROXY")
	require.Equal(t, env[0], env[1], "https_proxy")
	require.Equal(t, egress.LoopbackNoProxy, env[2])
	require.Equal(t, filepath.Join(dir, egress.PublicCABundleName), env[3], "PIP_CERT: a CA bundle the sandbox's uid can read")

	// The reference pipeline's install step (cmd/acceptance/reference, its
	// InstallCommand with the --user install its env allows).
	install := "PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --user --disable-pip-version-check --no-input " +
		"--no-warn-script-location --retries 1 --timeout 20 --index-url https://pypi.org/simple tabulate 2>&1 && echo installed; " +
		"python3 -c 'import tabulate; print(\"tabulate\", tabulate.__version__)' 2>&1"
	out, code := runCommand(t, execd, install)
	require.NotNil(t, code)
	assert.Equal(t, 0, *code, "%s", strings.Join(out, "\n"))
	assert.Contains(t, out, "installed", "pip install through the gateway: %s", strings.Join(out, "\n"))
	assert.Contains(t, out, "tabulate 0.9.0", "the stub index's tabulate (the host may have another)")
	assert.GreaterOrEqual(t, indexHits.Load(), int32(2), "the stub index served the page and the wheel")

	denied := `python3 -c "import urllib.request; urllib.request.urlopen('https://exfil.capstone.test/collect', timeout=10)" 2>&1; echo exit=$?`
	out, _ = runCommand(t, execd, denied)
	text := strings.Join(out, "\n")
	assert.Contains(t, text, "403", "the gateway refused the denied host")
	assert.NotContains(t, text, "exit=0")
	assert.Zero(t, sinkHits.Load(), "a denied host is never dialled")

	var allowed, refused int
	for _, ev := range srv.audit.Events(audit.Query{SandboxID: id, Kind: wire.KindEgress}) {
		switch {
		case ev.Egress.Host == "exfil.capstone.test":
			assert.Equal(t, "deny", ev.Egress.Decision, "%+v", ev.Egress)
			assert.Equal(t, "proxy", ev.Egress.Phase)
			refused++
		case ev.Egress.Decision == "allow":
			allowed++
		}
	}
	assert.Equal(t, 1, refused, "the denial is recorded once")
	assert.GreaterOrEqual(t, allowed, 2, "pypi.org and files.pythonhosted.org recorded as allowed")

	// The proxy is the sandbox's alone: any local process can connect to
	// its port, but without the credentials in the sandbox's environment it
	// answers 407 and asks the gateway nothing.
	sb := srv.lookup(id)
	require.NotNil(t, sb)
	addr := sb.egress.(*egress.Attachment).ProxyAddr()
	require.NotEmpty(t, addr)
	before := len(srv.audit.Events(audit.Query{SandboxID: id, Kind: wire.KindEgress}))
	req, _ := http.NewRequest(http.MethodGet, "http://pypi.org/simple/tabulate/", nil)
	proxy, err := url.Parse("http://" + addr)
	require.NoError(t, err)
	res, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}).Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusProxyAuthRequired, res.StatusCode)
	assert.Len(t, srv.audit.Events(audit.Query{SandboxID: id, Kind: wire.KindEgress}), before, "an unauthenticated request reached the gateway")
}
