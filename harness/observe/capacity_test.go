package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// capacityUpstream is a lifecycle server that answers every create 202 and
// counts the creates it got by API key.
type capacityUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	creates map[string]int // by OPEN-SANDBOX-API-KEY ("" keyless)
}

func newCapacityUpstream(t *testing.T) *capacityUpstream {
	u := &capacityUpstream{creates: map[string]int{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/sandboxes" {
			u.mu.Lock()
			u.creates[r.Header.Get("OPEN-SANDBOX-API-KEY")]++
			n := u.creates[r.Header.Get("OPEN-SANDBOX-API-KEY")]
			u.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"id":"sb-` + r.Header.Get("OPEN-SANDBOX-API-KEY") + string(rune('0'+n)) + `","status":{"state":"Running"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"SANDBOX::NOT_FOUND","message":"no such sandbox"}`))
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *capacityUpstream) got(key string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.creates[key]
}

type keyedAnswer struct {
	status int
	header http.Header
	body   []byte
}

// keyedCall makes a lifecycle call through p with API key key ("" none).
func keyedCall(t *testing.T, p *Proxy, method, path, key string) keyedAnswer {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = bytes.NewReader([]byte(`{"image":{"uri":"python:3.12"},"entrypoint":["sleep","infinity"],"resourceLimits":{"cpu":"500m"}}`))
	}
	req, err := http.NewRequest(method, "http://"+p.Domain()+path, body)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("OPEN-SANDBOX-API-KEY", key)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return keyedAnswer{res.StatusCode, res.Header, b}
}

// TestRefuseCreatesIsKeyScoped: drill D3 on a real target. While the proxy
// refuses the creates of one key, each of them is answered by the proxy
// with OpenSandbox 1.1.1's Kubernetes-pool answer (429
// KUBERNETES::POOL_CAPACITY_EXHAUSTED with Retry-After, byte for byte the
// bundled server's capacity fault) and never reaches the target, and its
// record says the harness injected it. Another key's creates (a classmate's,
// the harness's own), keyless ones and the refused key's other calls pass
// through; once the refusal is off, the key's creates pass through again.
func TestRefuseCreatesIsKeyScoped(t *testing.T) {
	for _, withView := range []bool{false, true} {
		up := newCapacityUpstream(t)
		var v *View
		if withView {
			v = NewView()
		}
		p, err := StartFor(up.URL, v)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })

		const subject, classmate = "subject-key", "classmate-key"
		require.NoError(t, p.RefuseCreates(Fingerprint(subject), 2))

		a := keyedCall(t, p, "POST", "/v1/sandboxes", subject)
		assert.Equal(t, http.StatusTooManyRequests, a.status)
		assert.Equal(t, "2", a.header.Get("Retry-After"), "Retry-After in seconds")
		assert.Equal(t, "application/json", a.header.Get("Content-Type"))
		assert.JSONEq(t, `{"code":"KUBERNETES::POOL_CAPACITY_EXHAUSTED","message":"No Pool capacity became available before the acquisition timeout."}`, string(a.body),
			"the contract's answer of a 1.1.1 Kubernetes pool at capacity")
		// Byte for byte what the bundled server's capacity fault answers
		// (both write it with wire.WriteCapacityExhausted).
		want := httptest.NewRecorder()
		wire.WriteCapacityExhausted(want, 2)
		assert.Equal(t, want.Body.Bytes(), a.body)
		assert.Equal(t, 0, up.got(subject), "an injected 429 never reaches the target")
		a = keyedCall(t, p, "POST", "/sandboxes/", subject) // the route without /v1 too
		assert.Equal(t, http.StatusTooManyRequests, a.status)

		assert.Equal(t, http.StatusAccepted, keyedCall(t, p, "POST", "/v1/sandboxes", classmate).status, "another key's create passes through")
		assert.Equal(t, http.StatusAccepted, keyedCall(t, p, "POST", "/v1/sandboxes", "").status, "a keyless create is nobody's: it passes through")
		assert.Equal(t, 1, up.got(classmate))
		assert.Equal(t, 1, up.got(""))
		assert.Equal(t, http.StatusNotFound, keyedCall(t, p, "GET", "/v1/sandboxes/nope", subject).status, "the key's other calls pass through")

		p.StopRefusing(Fingerprint(subject))
		assert.Equal(t, http.StatusAccepted, keyedCall(t, p, "POST", "/v1/sandboxes", subject).status, "off again: the key's creates pass through")
		assert.Equal(t, 1, up.got(subject))

		calls := p.Calls()
		require.Len(t, calls, 6)
		for i, c := range calls {
			if i < 2 {
				assert.Equal(t, CapacityInjected, c.Injected, "call %d", i)
				assert.Equal(t, http.StatusTooManyRequests, c.Status)
				assert.Equal(t, Fingerprint(subject), c.KeyFingerprint)
				assert.Equal(t, wire.CapacityExhaustedCode, c.ErrorCode)
				assert.Contains(t, c.Headers, "Retry-After")
				assert.NotEmpty(t, c.Body, "the refused create's request is on record")
				assert.Empty(t, c.SandboxID)
			} else {
				assert.Empty(t, c.Injected, "call %d (%s %s) was the target's answer", i, c.Method, c.Path)
			}
		}
		assert.Contains(t, CapacityInjected, "injected by the harness")
		if withView {
			assert.Len(t, v.IDs(), 3, "the three creates that passed through are the view's; the refused ones created nothing")
		}
	}
}

// TestRefuseCreatesNeedsAKeyAndABoundedRetryAfter: a refusal is by
// identity only (no key, no refusal: it would be a time window over every
// caller) and its Retry-After is 1 to MaxRetryAfter seconds.
func TestRefuseCreatesNeedsAKeyAndABoundedRetryAfter(t *testing.T) {
	up := newCapacityUpstream(t)
	p, err := Start(up.URL)
	require.NoError(t, err)
	defer p.Close()
	assert.Error(t, p.RefuseCreates("", 2))
	assert.Error(t, p.RefuseCreates(Fingerprint("k"), 0))
	assert.Error(t, p.RefuseCreates(Fingerprint("k"), MaxRetryAfter+1))
	assert.Equal(t, http.StatusAccepted, keyedCall(t, p, "POST", "/v1/sandboxes", "").status)
	assert.Equal(t, http.StatusAccepted, keyedCall(t, p, "POST", "/v1/sandboxes", "k").status)
}

// pySDKCapacityScript creates a sandbox with the official Python SDK and
// prints how the SDK read the answer it got.
const pySDKCapacityScript = `
import json, os
from datetime import timedelta
from opensandbox import SandboxSync
from opensandbox.config.connection_sync import ConnectionConfigSync
from opensandbox.exceptions import SandboxRateLimitException
out = {}
try:
    cfg = ConnectionConfigSync(domain=os.environ["OPEN_SANDBOX_DOMAIN"], api_key=os.environ["OPEN_SANDBOX_API_KEY"])
    SandboxSync.create("python:3.11", connection_config=cfg, timeout=timedelta(minutes=10),
                       entrypoint=["tail", "-f", "/dev/null"], resource={"cpu": "1", "memory": "1Gi"})
    out["created"] = True
except SandboxRateLimitException as e:
    out["rateLimited"] = True
    out["status"] = e.status_code
    out["code"] = e.error.code if e.error else None
    out["retryAfter"] = e.retry_after.total_seconds() if e.retry_after else None
except Exception as e:
    out["other"] = "%s %r" % (type(e).__name__, e)
print(json.dumps(out))
`

// TestRefusedCreateAsTheOfficialPythonSDKReadsIt: the official Python SDK
// (opensandbox 1.1.1, named by $OSB_PY_SDK_PYTHON, as for the bundled
// server's SDK tests) reads the proxy's injected answer as a Kubernetes
// pool's: a SandboxRateLimitException with status 429, the pool's error
// code and the Retry-After.
func TestRefusedCreateAsTheOfficialPythonSDKReadsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the official Python SDK (seconds)")
	}
	py := os.Getenv("OSB_PY_SDK_PYTHON")
	if py == "" || exec.Command(py, "-c", "import opensandbox").Run() != nil {
		msg := "the official Python SDK not measured: set OSB_PY_SDK_PYTHON to a python with opensandbox==1.1.1 installed (make deps)"
		if os.Getenv("OSB_SDK_REQUIRED") == "1" {
			t.Fatal(msg + " (OSB_SDK_REQUIRED=1)")
		}
		t.Skip(msg)
	}
	up := newCapacityUpstream(t)
	p, err := Start(up.URL)
	require.NoError(t, err)
	defer p.Close()
	const key = "py-sdk-key"
	require.NoError(t, p.RefuseCreates(Fingerprint(key), 2))

	script := filepath.Join(t.TempDir(), "sdk.py")
	require.NoError(t, os.WriteFile(script, []byte(pySDKCapacityScript), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPEN_SANDBOX_DOMAIN=" + p.Domain(), "OPEN_SANDBOX_API_KEY=" + key}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	var out struct {
		RateLimited bool     `json:"rateLimited"`
		Status      int      `json:"status"`
		Code        string   `json:"code"`
		RetryAfter  *float64 `json:"retryAfter"`
		Created     bool     `json:"created"`
		Other       string   `json:"other"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	require.True(t, out.RateLimited, "%+v", out)
	assert.Equal(t, http.StatusTooManyRequests, out.Status)
	assert.Equal(t, wire.CapacityExhaustedCode, out.Code)
	require.NotNil(t, out.RetryAfter)
	assert.Equal(t, 2.0, *out.RetryAfter)
	assert.Equal(t, 0, up.got(key), "no create reached the target")
	t.Logf("the SDK made %d call(s) through the proxy", len(p.Calls()))
	for _, c := range p.Calls() {
		if c.Method == http.MethodPost {
			assert.Equal(t, CapacityInjected, c.Injected)
		}
	}
}
