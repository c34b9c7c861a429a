package egress

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const pypiPolicy = `{"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"},{"action":"allow","target":"*.pythonhosted.org"},{"action":"allow","target":"unmapped.test"}]}`

func TestGatewayAllowsMappedStubAndNeverDialsDenied(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org", "files.pythonhosted.org", "exfil.test"}})
	pypi, files, exfil := e.stubs["pypi.org"], e.stubs["files.pythonhosted.org"], e.stubs["exfil.test"]

	t.Run("http relay", func(t *testing.T) {
		resp, err := e.relayClient().Get("http://pypi.org/simple/pandas/")
		require.NoError(t, err)
		body := readAll(t, resp)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "stub pypi.org host=pypi.org path=/simple/pandas/", body)
	})
	t.Run("https relay terminates TLS with the hub CA", func(t *testing.T) {
		resp, err := e.relayClient().Get("https://files.pythonhosted.org/packages/x.whl?a=1")
		require.NoError(t, err)
		body := readAll(t, resp)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "stub files.pythonhosted.org host=files.pythonhosted.org path=/packages/x.whl?a=1", body)
		require.NotNil(t, resp.TLS)
		assert.Equal(t, "files.pythonhosted.org", resp.TLS.PeerCertificates[0].DNSNames[0])
	})
	t.Run("proxy absolute URI", func(t *testing.T) {
		resp, err := e.proxyClient().Get("http://pypi.org/simple/")
		require.NoError(t, err)
		assert.Equal(t, "stub pypi.org host=pypi.org path=/simple/", readAll(t, resp))
	})
	t.Run("proxy CONNECT", func(t *testing.T) {
		resp, err := e.proxyClient().Get("https://pypi.org/simple/numpy/")
		require.NoError(t, err)
		assert.Equal(t, "stub pypi.org host=pypi.org path=/simple/numpy/", readAll(t, resp))
	})
	t.Run("denied via http relay", func(t *testing.T) {
		resp, err := e.relayClient().Get("http://exfil.test/steal?d=1")
		require.NoError(t, err)
		body := readAll(t, resp)
		assert.Equal(t, 403, resp.StatusCode)
		assert.Contains(t, body, "egress denied by policy: exfil.test (rule default)")
	})
	t.Run("denied via https relay", func(t *testing.T) {
		_, err := e.relayClient().Get("https://exfil.test/")
		require.Error(t, err)
	})
	t.Run("denied via proxy", func(t *testing.T) {
		resp, err := e.proxyClient().Get("http://exfil.test/")
		require.NoError(t, err)
		assert.Equal(t, 403, resp.StatusCode)
		assert.Contains(t, readAll(t, resp), "egress denied")
		_, err = e.proxyClient().Get("https://exfil.test/")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Forbidden")
	})
	t.Run("apex not covered by wildcard", func(t *testing.T) {
		resp, err := e.relayClient().Get("http://pythonhosted.org/")
		require.NoError(t, err)
		assert.Equal(t, 403, resp.StatusCode)
		readAll(t, resp)
	})

	assert.Equal(t, 4, pypi.hits()+files.hits())
	assert.Equal(t, 0, exfil.hits(), "the stub for a denied name must never be dialled")

	ex := e.rec.egress("exfil.test")
	require.NotEmpty(t, ex)
	for _, ev := range ex {
		assert.Equal(t, "deny", ev.Decision)
		assert.Equal(t, "default", ev.Rule)
		assert.Empty(t, ev.Upstream)
	}
	var phases []string
	for _, ev := range ex {
		phases = append(phases, ev.Phase)
	}
	assert.Contains(t, phases, "connect")
	assert.Contains(t, phases, "proxy")
	for _, ev := range e.rec.egress("pypi.org") {
		assert.Equal(t, "allow", ev.Decision)
		assert.Equal(t, "pypi.org", ev.Rule)
		assert.Equal(t, pypi.URL, ev.Upstream)
		assert.Equal(t, "sbx-test-1", e.rec.kind(wire.KindEgress)[0].SandboxID)
	}
	for _, ev := range e.rec.egress("files.pythonhosted.org") {
		assert.Equal(t, 443, ev.Port)
		assert.Equal(t, "*.pythonhosted.org", ev.Rule)
	}
}

func TestGatewayUnmappedAllowedHostFailsClosed(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"}})
	resp, err := e.relayClient().Get("http://unmapped.test/")
	require.NoError(t, err)
	body := readAll(t, resp)
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	assert.Contains(t, body, "no upstream is configured")
	evs := e.rec.egress("unmapped.test")
	require.Len(t, evs, 1)
	assert.Equal(t, "error", evs[0].Decision)
	assert.Equal(t, "unmapped.test", evs[0].Rule)
	assert.Contains(t, evs[0].Reason, "no upstream configured")
}

func TestGatewayRawIPRefused(t *testing.T) {
	e := newEnv(t, envOpts{policy: `{"defaultAction":"allow"}`, stubs: []string{"pypi.org"}})
	// CONNECT to an IP through the proxy.
	c, err := net.Dial("tcp", e.sc.ProxyAddr())
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT 10.1.2.3:443 HTTP/1.1\r\nHost: 10.1.2.3:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	assert.Equal(t, 403, resp.StatusCode)
	assert.Contains(t, readAll(t, resp), "raw IP destination 10.1.2.3 is never relayed")
	// Absolute URI to an IP through the proxy.
	r2, err := e.proxyClient().Get("http://127.0.0.1:9/")
	require.NoError(t, err)
	assert.Equal(t, 403, r2.StatusCode)
	readAll(t, r2)
	// A program that connects to 127.0.0.1:80 itself (Host: 127.0.0.1).
	r3, err := e.relayClient().Get("http://127.0.0.1/")
	require.NoError(t, err)
	assert.Equal(t, 403, r3.StatusCode)
	readAll(t, r3)
	// TLS to an IP carries no SNI: the relay closes the connection.
	_, err = e.relayClient().Get("https://10.1.2.3/")
	require.Error(t, err)
	for _, ev := range e.rec.egress("") {
		if ev.Phase != "policy" {
			assert.Equal(t, "deny", ev.Decision, ev.Host)
			assert.Equal(t, "ip-literal", ev.Rule, ev.Host)
		}
	}
	assert.Equal(t, 0, e.stubs["pypi.org"].hits())
}

func TestGatewaySocketDirectGainsNothing(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org", "exfil.test"}})
	c, err := net.Dial("unix", e.att.SocketPath())
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT exfil.test:443 HTTP/1.1\r\nHost: exfil.test:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	assert.Equal(t, 403, resp.StatusCode)
	assert.Equal(t, "deny", resp.Header.Get("X-Osb-Decision"))
	readAll(t, resp)

	// A tunnel opened for an allowed host cannot be used for another Host.
	c2, err := net.Dial("unix", e.att.SocketPath())
	require.NoError(t, err)
	defer c2.Close()
	br := bufio.NewReader(c2)
	fmt.Fprintf(c2, "CONNECT pypi.org:80 HTTP/1.1\r\nHost: pypi.org:80\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	fmt.Fprintf(c2, "GET / HTTP/1.1\r\nHost: exfil.test\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode)
	readAll(t, resp)
	assert.Equal(t, 0, e.stubs["exfil.test"].hits())
	assert.Equal(t, 0, e.stubs["pypi.org"].hits())
}

func TestGatewayDenyOverride(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org", "files.pythonhosted.org"}})
	require.Error(t, e.hub.SetDenyOverride([]string{""}))
	require.NoError(t, e.hub.SetDenyOverride([]string{"PyPI.org", "*.pythonhosted.org"}))
	resp, err := e.relayClient().Get("http://pypi.org/simple/")
	require.NoError(t, err)
	assert.Equal(t, 403, resp.StatusCode)
	assert.Contains(t, readAll(t, resp), "rule override:pypi.org")
	resp, err = e.proxyClient().Get("http://files.pythonhosted.org/x")
	require.NoError(t, err)
	assert.Equal(t, 403, resp.StatusCode)
	readAll(t, resp)
	assert.Equal(t, 0, e.stubs["pypi.org"].hits()+e.stubs["files.pythonhosted.org"].hits())
	evs := e.rec.egress("pypi.org")
	require.NotEmpty(t, evs)
	assert.Equal(t, "override:pypi.org", evs[0].Rule)
	assert.Equal(t, "override:*.pythonhosted.org", e.rec.egress("files.pythonhosted.org")[0].Rule)
	faults := e.rec.kind(wire.KindFault)
	require.Len(t, faults, 1)
	assert.True(t, faults[0].Fault.Active)
	assert.Equal(t, "egress-deny-override", faults[0].Fault.Name)

	e.hub.ClearDenyOverride()
	resp, err = e.relayClient().Get("http://pypi.org/simple/")
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	readAll(t, resp)
	faults = e.rec.kind(wire.KindFault)
	require.Len(t, faults, 2)
	assert.False(t, faults[1].Fault.Active)
}

func TestGatewayPolicyUpdateAppliesToOpenConnections(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"}})
	client := e.relayClient() // keep-alive: the second request reuses the tunnel
	resp, err := client.Get("http://pypi.org/a")
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	readAll(t, resp)
	w := e.api(t, http.MethodPatch, "/policy", `[{"action":"deny","target":"pypi.org"}]`)
	require.Equal(t, 200, w.Code, w.Body.String())
	resp, err = client.Get("http://pypi.org/b")
	require.NoError(t, err)
	assert.Equal(t, 403, resp.StatusCode)
	readAll(t, resp)
	assert.Equal(t, 1, e.stubs["pypi.org"].hits())
	var sawUpdate bool
	for _, ev := range e.rec.egress("") {
		if ev.Phase == "policy" {
			sawUpdate = true
			assert.Contains(t, ev.Reason, `"target":"pypi.org"`)
		}
	}
	assert.True(t, sawUpdate)
}

func TestDenyWebhook(t *testing.T) {
	var mu sync.Mutex
	var got []map[string]string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]string
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	defer hook.Close()
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"}, webhook: hook.URL})
	resp, err := e.relayClient().Get("http://exfil.test/")
	require.NoError(t, err)
	readAll(t, resp)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 }, 5*time.Second, 10*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "exfil.test", got[0]["hostname"])
	assert.Equal(t, "opensandbox-egress", got[0]["source"])
	assert.Equal(t, "sbx-test-1", got[0]["sandboxId"])
	_, err = time.Parse(time.RFC3339, got[0]["timestamp"])
	assert.NoError(t, err)
	assert.Len(t, got[0], 4)
}

func TestNewHubRejectsNonLoopback(t *testing.T) {
	dir := t.TempDir()
	_, err := NewHub(HubConfig{StateDir: dir, Upstreams: map[string]string{"pypi.org": "http://10.0.0.1:80"}})
	assert.ErrorContains(t, err, "not loopback")
	_, err = NewHub(HubConfig{StateDir: dir, DenyWebhook: "http://192.0.2.1/hook"})
	assert.ErrorContains(t, err, "not loopback")
	_, err = NewHub(HubConfig{StateDir: dir, Upstreams: map[string]string{"pypi.org": "ftp://127.0.0.1"}})
	assert.Error(t, err)
	_, err = NewHub(HubConfig{})
	assert.Error(t, err)
}

func TestAttachLifecycle(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"}})
	_, err := e.hub.Attach("sbx-test-1", Policy{}, false)
	assert.Error(t, err, "duplicate attach")
	_, err = e.hub.Attach("../x", Policy{}, false)
	assert.Error(t, err)
	_, err = e.hub.Attach("bad-policy", Policy{DefaultAction: "maybe"}, false)
	assert.Error(t, err)

	files := e.att.SandboxFiles()
	bundle, err := os.ReadFile(files[SandboxCABundlePath])
	require.NoError(t, err)
	assert.Contains(t, string(bundle), strings.TrimSpace(string(e.hub.CACertPEM())))
	envs := e.att.SandboxEnv()
	for _, k := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE"} {
		assert.Equal(t, SandboxCABundlePath, envs[k], k)
	}
	assert.Len(t, e.att.Token(), 48)

	// An open tunnel is cut when the attachment closes; the socket goes away.
	c, err := net.Dial("unix", e.att.SocketPath())
	require.NoError(t, err)
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "CONNECT pypi.org:80 HTTP/1.1\r\nHost: pypi.org:80\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	readAll(t, resp)
	require.NoError(t, e.att.Close())
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(br)
	assert.NoError(t, err, "tunnel closed (EOF), not timed out")
	_, err = os.Stat(e.att.SocketPath())
	assert.True(t, os.IsNotExist(err))
	_, ok := e.hub.Attachment("sbx-test-1")
	assert.False(t, ok)
}

func TestLeafCertificateVerifies(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"}})
	conn, err := tls.Dial("tcp", e.sc.HTTPSAddr(), &tls.Config{ServerName: "pypi.org", RootCAs: e.pool})
	require.NoError(t, err)
	defer conn.Close()
	st := conn.ConnectionState()
	assert.Contains(t, []string{"", "http/1.1"}, st.NegotiatedProtocol)
	assert.NoError(t, st.PeerCertificates[0].VerifyHostname("pypi.org"))
}

// A deny override of one sandbox (drill D1 keyed to one subject) denies as
// the hub-wide one does, for that sandbox only, and goes with its detach.
func TestGatewaySandboxDenyOverride(t *testing.T) {
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"}})
	require.Error(t, e.hub.SetSandboxDenyOverride("sbx-test-1", []string{""}))
	require.NoError(t, e.hub.SetSandboxDenyOverride("", []string{"pypi.org"}), "an empty id only checks the targets")
	require.NoError(t, e.hub.SetSandboxDenyOverride("sbx-other", []string{"pypi.org"}))
	resp, err := e.relayClient().Get("http://pypi.org/simple/")
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode, "another sandbox's override does not apply")
	readAll(t, resp)

	require.NoError(t, e.hub.SetSandboxDenyOverride("sbx-test-1", []string{"PyPI.org"}))
	resp, err = e.relayClient().Get("http://pypi.org/simple/")
	require.NoError(t, err)
	assert.Equal(t, 403, resp.StatusCode)
	assert.Contains(t, readAll(t, resp), "rule override:pypi.org")
	assert.Equal(t, 1, e.stubs["pypi.org"].hits())
	evs := e.rec.egress("pypi.org")
	require.NotEmpty(t, evs)
	assert.Equal(t, "override:pypi.org", evs[len(evs)-1].Rule)
	var onForIt bool
	for _, f := range e.rec.kind(wire.KindFault) {
		onForIt = onForIt || (f.SandboxID == "sbx-test-1" && f.Fault.Active && f.Fault.Name == "egress-deny-override")
	}
	assert.True(t, onForIt, "switching it on is audited with the sandbox")

	require.NoError(t, e.hub.SetSandboxDenyOverride("sbx-test-1", nil))
	resp, err = e.relayClient().Get("http://pypi.org/simple/")
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	readAll(t, resp)
}
