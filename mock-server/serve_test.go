package mockserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/egress"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// syncBuffer is a goroutine-safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeWiring is a server wiring with a fake runtime and egress hub, for the
// one server a test starts with it.
func fakeWiring(t *testing.T) (*fakeRuntime, Wiring) {
	rt := &fakeRuntime{t: t}
	return rt, Wiring{
		NewRuntime: func(RuntimeOptions) (runtime.Runtime, error) { return rt, nil },
		NewEgress: func(EgressOptions) (EgressHub, io.Closer, error) {
			return newFakeEgress(), io.NopCloser(nil), nil
		},
	}
}

// startServe runs serve-mock and returns its printed URL.
func startServe(t *testing.T, run func(stdout, stderr io.Writer) int) (string, chan int, *syncBuffer) {
	pr, pw := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		code := run(pw, stderr)
		_ = pw.Close()
		done <- code
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case url, ok := <-lines:
		require.True(t, ok, "serve-mock printed nothing; stderr: %s", stderr.String())
		return url, done, stderr
	case <-time.After(10 * time.Second):
		t.Fatalf("serve-mock did not print its URL; stderr: %s", stderr.String())
	}
	return "", nil, nil
}

func TestServeMainPrintsURLAndStopsCleanly(t *testing.T) {
	rt, w := fakeWiring(t)
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	url, done, stderr := startServe(t, func(o, e io.Writer) int {
		return serveMain(ctx, []string{"--listen", "127.0.0.1:0", "--api-key", "k1", "--admin-token", "a1",
			"--state-dir", dir, "--max-timeout", "1h", "--upstream", "pypi.org=http://127.0.0.1:1"}, o, e, w)
	})
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+$`, url)

	b, _ := json.Marshal(validCreate())
	req, _ := http.NewRequest("POST", url+"/v1/sandboxes", bytes.NewReader(b))
	req.Header.Set(headerAPIKey, "k1")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusAccepted, res.StatusCode)
	// max-timeout is honoured
	m := validCreate()
	m["timeout"] = 7200
	b, _ = json.Marshal(m)
	req, _ = http.NewRequest("POST", url+"/v1/sandboxes", bytes.NewReader(b))
	req.Header.Set(headerAPIKey, "k1")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	req, _ = http.NewRequest("GET", url+"/_mock/info", nil)
	req.Header.Set(headerAdminToken, "a1")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "stderr: %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve-mock did not stop")
	}
	require.Len(t, rt.sandboxes, 1)
	assert.True(t, rt.sandboxes[0].isDestroyed(), "every sandbox removed on shutdown")
	raw, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"k1"`)
	assert.Contains(t, string(raw), Fingerprint("k1"))
}

func TestServeMainStopsOnSIGTERM(t *testing.T) {
	rt, w := fakeWiring(t)
	url, done, stderr := startServe(t, func(o, e io.Writer) int {
		return serveWith([]string{"--listen", "127.0.0.1:0", "--api-key", "k1"}, o, e, w)
	})
	b, _ := json.Marshal(validCreate())
	req, _ := http.NewRequest("POST", url+"/v1/sandboxes", bytes.NewReader(b))
	req.Header.Set(headerAPIKey, "k1")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "stderr: %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve-mock ignored SIGTERM")
	}
	require.Len(t, rt.sandboxes, 1)
	assert.True(t, rt.sandboxes[0].isDestroyed())
}

func TestServeMainBadFlags(t *testing.T) {
	_, w := fakeWiring(t)
	for _, args := range [][]string{
		{"--listen", "127.0.0.1:0"},                    // no key
		{"--api-key", "k", "--listen", "nonsense"},     // bad address
		{"--api-key", "k", "--upstream", "pypi.org"},   // bad upstream
		{"--api-key", "k", "extra"},                    // stray argument
		{"--api-key", "k", "--max-timeout", "forever"}, // bad duration
		{"--api-key", "k", "--max-timeout", "-1h"},     // negative duration
		{"--api-key", "k", "--max-timeout", "0s"},      // zero duration
		{"--api-key", "k", "--listen", "127.0.0.1:99999"},
		{"--api-key", "k", "--listen", "example.com:80"}, // a name would need DNS
		{"--api-key", "k", "--disk-limit", "lots"},
		{"--api-key", "k", "--disk-limit", "0"},
		{"--api-key", "k", "--deny-webhook", "not a url"},
		{"--api-key", "k", "--state-dir", "/etc/hostname"},
		{"--api-key", "k", "--no-such-flag"},
		{"--api-key", "k", "--volume-root", "relative/dir"},
		{"--api-key", "k", "--volume-root", "/etc/hostname"},
		{"--api-key", "k", "--renew-min-interval", "0s"},
		{"--api-key", "k", "--renew-min-interval", "500ms"},
		{"--api-key", "k", "--default-limits", "gpu=1"},
		{"--api-key", "k", "--default-limits", "memory=lots"},
		{"--api-key", "k", "--tenant-quota", "sandboxes=0"},
		{"--api-key", "k", "--tenant-quota", "pids=-5"},
		{"--api-key", "k", "--tenant-volume-quota", "0"},
		{"--api-key", "k", "--tenant-volume-quota", "big"},
		{"--api-key", "k", "--private-volumes", "--volume-root", "/tmp"},
		{"--api-key", "k", "--no-auth"}, // a key and no auth: which?
	} {
		var out, errb bytes.Buffer
		code := serveMain(context.Background(), args, &out, &errb, w)
		assert.Equal(t, 2, code, "%v: bad flags exit 2 (%s)", args, errb.String())
		assert.Empty(t, out.String(), "nothing on stdout for %v", args)
		assert.NotEmpty(t, strings.TrimSpace(errb.String()), "%v", args)
	}
}

func TestEgressAdapterRejectsInvalidPolicy(t *testing.T) {
	hub, err := egress.NewHub(egress.HubConfig{StateDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = hub.Close() })
	e := newEnv(t, func(c *Config) { c.Egress = EgressAdapter{Hub: hub} })
	e.rt.mu.Lock()
	e.rt.network = true // a network namespace per sandbox: the sidecar is given the gateway socket
	e.rt.mu.Unlock()
	r := e.call("POST", "/v1/sandboxes", func() map[string]any {
		m := validCreate()
		m["networkPolicy"] = map[string]any{"defaultAction": "deny", "egress": []any{map[string]string{"action": "allow", "target": ""}}}
		return m
	}(), nil)
	assert.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
	assert.Equal(t, "SANDBOX::INVALID_PARAMETER", r.JSON(t)["code"])
	id := e.create(func(m map[string]any) {
		m["networkPolicy"] = map[string]any{"defaultAction": "deny", "egress": []any{map[string]string{"action": "allow", "target": "pypi.org"}}}
	})
	ep := e.call("GET", "/v1/sandboxes/"+id+"/endpoints/18080", nil, nil).JSON(t)
	assert.NotEmpty(t, ep["headers"])
	spec := e.rt.byID(id).spec
	assert.FileExists(t, spec.GatewaySocket)
	assert.Empty(t, spec.Env["HTTPS_PROXY"])
	assert.Equal(t, "network", e.srv.Info().EgressEnforcement)
}

// Without a network namespace (insecure mode) a sandbox with a policy gets
// no gateway socket (no sidecar can run) but the gateway's loopback proxy in
// its environment, and the server says egress is enforced at the proxy only
// (TestInsecureSandboxInstallsThroughTheEgressGateway runs pip through it).
func TestEgressWithoutNetworkNamespaceIsAProxy(t *testing.T) {
	dir := t.TempDir()
	hub, err := egress.NewHub(egress.HubConfig{StateDir: dir})
	require.NoError(t, err)
	t.Cleanup(func() { _ = hub.Close() })
	e := newEnv(t, func(c *Config) { c.Egress = EgressAdapter{Hub: hub} })
	assert.Equal(t, "proxy", e.srv.Info().EgressEnforcement)
	id := e.create(func(m map[string]any) {
		m["env"] = map[string]string{"HTTPS_PROXY": "http://elsewhere.example:3128"}
		m["networkPolicy"] = map[string]any{"defaultAction": "deny", "egress": []any{map[string]string{"action": "allow", "target": "pypi.org"}}}
	})
	spec := e.rt.byID(id).spec
	assert.Empty(t, spec.GatewaySocket)
	assert.Empty(t, spec.ExtraFiles)
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		assert.Regexp(t, `^http://osb:[0-9a-f]+@127\.0\.0\.1:[0-9]+$`, spec.Env[k], "%s (the request's is replaced)", k)
	}
	assert.Equal(t, egress.LoopbackNoProxy, spec.Env["NO_PROXY"])
	bundle := filepath.Join(dir, egress.PublicCABundleName)
	assert.Equal(t, bundle, spec.Env["PIP_CERT"])
	assert.Equal(t, bundle, spec.Env["SSL_CERT_FILE"])
	fi, err := os.Stat(bundle)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	// A sandbox without a policy gets none of it.
	other := e.rt.byID(e.create(nil)).spec
	assert.Empty(t, other.Env["HTTPS_PROXY"])
	// The proxy goes with its sandbox.
	u, err := url.Parse(spec.Env["HTTPS_PROXY"])
	require.NoError(t, err)
	c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	require.NoError(t, err, "the proxy listens while its sandbox lives")
	c.Close()
	assert.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/sandboxes/"+id, nil, nil).Status)
	_, err = net.DialTimeout("tcp", u.Host, 5*time.Second)
	assert.Error(t, err, "the proxy closed with its sandbox")
}

func TestStartBundledAndAddAPIKey(t *testing.T) {
	rt, w := fakeWiring(t)
	b, err := StartBundled(context.Background(), BundledConfig{APIKey: "harness-key", AdminToken: "adm", Wiring: w})
	require.NoError(t, err)
	srv := b.Server
	require.NoError(t, srv.AddAPIKey("subject-key"))
	assert.Error(t, srv.AddAPIKey(""))
	do := func(key string) int {
		req, _ := http.NewRequest("GET", srv.URL()+"/v1/sandboxes", nil)
		req.Header.Set(headerAPIKey, key)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	assert.Equal(t, http.StatusOK, do("harness-key"))
	assert.Equal(t, http.StatusOK, do("subject-key"))
	assert.Equal(t, http.StatusUnauthorized, do("other"))
	fps := map[string]bool{}
	for _, ev := range srv.Audit() {
		if ev.Lifecycle != nil {
			fps[ev.Lifecycle.KeyFingerprint] = true
		}
	}
	assert.True(t, fps[Fingerprint("harness-key")] && fps[Fingerprint("subject-key")])

	b2, err := StartBundled(context.Background(), BundledConfig{})
	assert.Error(t, err, "an API key is required")
	assert.Nil(t, b2)

	tmp := b.tmpDir
	assert.DirExists(t, tmp)
	b3 := e2eCreate(t, srv, "harness-key")
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	assert.NoDirExists(t, tmp)
	assert.True(t, rt.byID(b3).isDestroyed())
}

func e2eCreate(t *testing.T, srv *Server, key string) string {
	b, _ := json.Marshal(validCreate())
	req, _ := http.NewRequest("POST", srv.URL()+"/v1/sandboxes", bytes.NewReader(b))
	req.Header.Set(headerAPIKey, key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusAccepted, res.StatusCode)
	var m map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&m))
	return m["id"].(string)
}

// The production egress wiring passes the deny webhook and the pass-through
// switch to the hub, which refuses a webhook off the loopback range.
func TestEgressWiringPassesWebhook(t *testing.T) {
	rec := audit.RecorderFunc(func(wire.Event) {})
	_, _, err := newEgressHub(EgressOptions{StateDir: t.TempDir(), Audit: rec, DenyWebhook: "http://192.0.2.1/hook"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not loopback")
	hub, closer, err := newEgressHub(EgressOptions{StateDir: t.TempDir(), Audit: rec, DenyWebhook: "http://127.0.0.1:9/hook", PassThrough: true})
	require.NoError(t, err)
	require.NotNil(t, hub)
	require.NoError(t, closer.Close())
}

// TestServeMainSecretsFromFileAndEnv starts serve-mock with its API key in a
// file and its admin token in the environment (neither on argv, where ps
// shows it): both work, the variable is gone from the server's environment
// once read, and a bad source is a usage error naming it.
func TestServeMainSecretsFromFileAndEnv(t *testing.T) {
	_, w := fakeWiring(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("k-from-file\n"), 0o600))
	t.Setenv(EnvServeAdminToken, "admin-from-env")
	ctx, cancel := context.WithCancel(context.Background())
	url, done, stderr := startServe(t, func(o, e io.Writer) int {
		return serveMain(ctx, []string{"--listen", "127.0.0.1:0", "--api-key-file", keyFile}, o, e, w)
	})
	_, still := os.LookupEnv(EnvServeAdminToken)
	assert.False(t, still, "the admin token must not stay in the server's environment")
	get := func(path, hdr, v string) int {
		req, _ := http.NewRequest("GET", url+path, nil)
		req.Header.Set(hdr, v)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("/v1/sandboxes", headerAPIKey, "k-from-file"))
	assert.Equal(t, http.StatusUnauthorized, get("/v1/sandboxes", headerAPIKey, "k-from-file-x"))
	assert.Equal(t, http.StatusOK, get("/_mock/info", headerAdminToken, "admin-from-env"))
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "stderr: %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve-mock did not stop")
	}

	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("k"), serveSecretMax+1), 0o600))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--api-key", "k", "--api-key-file", keyFile}, "both given"},
		{[]string{"--api-key-file", filepath.Join(dir, "missing")}, "--api-key-file"},
		{[]string{"--api-key-file", empty}, "empty"},
		{[]string{"--api-key-file", big}, "larger than"},
		{[]string{"--api-key-file", dir}, "not a regular file"},
		{[]string{"--api-key", "k", "--admin-token", "a", "--admin-token-file", keyFile}, "both given"},
	} {
		var out, errb bytes.Buffer
		code := serveMain(context.Background(), append([]string{"--listen", "127.0.0.1:0"}, c.args...), &out, &errb, w)
		assert.Equal(t, 2, code, "%v: %s", c.args, errb.String())
		assert.Contains(t, errb.String(), c.want, "%v", c.args)
		assert.NotContains(t, errb.String(), "k-from-file", "a secret is never echoed")
	}
}

// serve-mock --no-auth runs the server as upstream's CI runs the real one
// (no api_key): every lifecycle call is accepted, with any key or none, the
// proxy route as always; no key can be added through the admin API (so no
// tenants), and stderr says so.
func TestServeMainNoAuth(t *testing.T) {
	_, w := fakeWiring(t)
	ctx, cancel := context.WithCancel(context.Background())
	url, done, stderr := startServe(t, func(o, e io.Writer) int {
		return serveMain(ctx, []string{"--listen", "127.0.0.1:0", "--no-auth", "--admin-token", "a1"}, o, e, w)
	})
	call := func(method, path, key, admin string, body any) int {
		var rdr io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rdr = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, url+path, rdr)
		if key != "" {
			req.Header.Set(headerAPIKey, key)
		}
		if admin != "" {
			req.Header.Set(headerAdminToken, admin)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	assert.Equal(t, http.StatusAccepted, call("POST", "/v1/sandboxes", "", "", validCreate()), "no key")
	assert.Equal(t, http.StatusOK, call("GET", "/v1/sandboxes", "", "", nil))
	assert.Equal(t, http.StatusOK, call("GET", "/v1/sandboxes", "any-key-at-all", "", nil))
	assert.Equal(t, http.StatusBadRequest, call("POST", "/_mock/api-keys", "", "a1", map[string]any{"key": "k2", "tenant": "t1"}),
		"no key can be added: it would tell nothing apart")
	assert.Equal(t, http.StatusBadRequest, call("POST", "/_mock/api-keys", "", "a1", map[string]any{"key": "k2"}))
	assert.Equal(t, http.StatusOK, call("GET", "/v1/sandboxes", "", "", nil), "still no auth")
	assert.Equal(t, http.StatusUnauthorized, call("GET", "/_mock/info", "", "", nil), "the admin plane keeps its token")
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "stderr: %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("serve-mock did not stop")
	}
	assert.Contains(t, stderr.String(), "--no-auth")
}

func TestNoAuthConfig(t *testing.T) {
	_, err := New(Config{APIKey: "k", NoAuth: true, Runtime: &fakeRuntime{t: t}})
	assert.Error(t, err, "a key and NoAuth")
	e := newEnv(t, func(c *Config) { c.APIKey, c.NoAuth = "", true })
	assert.ErrorIs(t, e.srv.AddAPIKey("k"), ErrAuthOff)
	assert.ErrorIs(t, e.srv.AddAPIKeyTenant("k", "t"), ErrAuthOff)
	assert.Equal(t, http.StatusOK, e.call("GET", "/v1/sandboxes", nil, map[string]string{headerAPIKey: ""}).Status)
	_, err = StartBundled(context.Background(), BundledConfig{APIKey: "k", NoAuth: true})
	assert.Error(t, err)
}
