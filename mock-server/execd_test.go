package mockserver

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

func postJSON(t testing.TB, url string, body any, hdr map[string]string) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", url, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	require.NoError(t, err)
	return res
}

func commandEvents(e *testEnv, id string) []*wire.Command {
	var out []*wire.Command
	for _, ev := range e.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCommand}) {
		out = append(out, ev.Command)
	}
	return out
}

func TestExecdCommandAudit(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	base := "http://" + e.execdAddr(id)

	res := postJSON(t, base+"/command", map[string]any{"command": "echo hello\nworld", "cwd": "/workspace", "timeout": 5000}, nil)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	assert.Contains(t, string(body), `"text":"hello"`)

	res = postJSON(t, base+"/command", map[string]any{"command": "fail"}, nil)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()

	res = postJSON(t, base+"/command", map[string]any{"command": "x", "cwd": "/nonexistent"}, nil)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)

	// /proxy/44772/command is execd itself, and is audited too
	res = postJSON(t, base+"/proxy/44772/command", map[string]any{"command": "echo via-proxy"}, nil)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()

	cmds := commandEvents(e, id)
	require.Len(t, cmds, 4)
	c := cmds[0]
	assert.Equal(t, "cmd-echo hello\nworld", c.ID)
	assert.Equal(t, "echo hello\nworld", c.Command)
	assert.Equal(t, "/workspace", c.Cwd)
	assert.Equal(t, int64(5000), c.TimeoutMs)
	require.NotNil(t, c.ExitCode)
	assert.Equal(t, 0, *c.ExitCode)
	assert.Equal(t, int64(len("hello")+len("world")), c.StdoutBytes)
	assert.False(t, c.StartedAt.IsZero())

	require.NotNil(t, cmds[1].ExitCode)
	assert.Equal(t, 3, *cmds[1].ExitCode)
	assert.Equal(t, int64(4), cmds[1].StderrBytes)

	assert.Nil(t, cmds[2].ExitCode)
	assert.Contains(t, cmds[2].Error, "status 400")
	assert.Contains(t, cmds[2].Error, "INVALID_REQUEST_BODY")

	assert.Equal(t, "echo via-proxy", cmds[3].Command)
	require.NotNil(t, cmds[3].ExitCode)

	out := e.srv.lookup(id).output.String()
	assert.Contains(t, out, "hello\nworld\n")
	assert.Contains(t, out, "boom")
}

func TestSSEPassesThroughUnbuffered(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	sb := e.rt.byID(id)
	urls := map[string]string{
		"execd endpoint": "http://" + e.execdAddr(id) + "/command",
		"server proxy":   e.srv.URL() + "/sandboxes/" + id + "/proxy/44772/command",
	}
	for name, u := range urls {
		t.Run(name, func(t *testing.T) {
			sb.mu.Lock()
			sb.release = make(chan struct{})
			release := sb.release
			sb.mu.Unlock()
			res := postJSON(t, u, map[string]any{"command": "slow"}, nil)
			defer res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode)
			rd := bufio.NewReader(res.Body)
			got := make(chan string, 1)
			go func() {
				var seen []string
				for {
					line, err := rd.ReadString('\n')
					if strings.TrimSpace(line) != "" {
						seen = append(seen, strings.TrimSpace(line))
					}
					if strings.Contains(line, `"first"`) || err != nil {
						got <- strings.Join(seen, "|")
						return
					}
				}
			}()
			select {
			case s := <-got:
				// The backend is still blocked before its second event: the
				// first one must already have reached us.
				assert.Contains(t, s, `"first"`)
			case <-time.After(5 * time.Second):
				t.Fatal("first SSE event not delivered while the stream is open: the proxy buffers")
			}
			close(release)
			rest, _ := io.ReadAll(rd)
			assert.Contains(t, string(rest), `"second"`)
			assert.Contains(t, string(rest), `execution_complete`)
		})
	}
	// SSE through /proxy/{port} of an in-sandbox service, via the server proxy
	sb.mu.Lock()
	sb.release = make(chan struct{})
	release := sb.release
	sb.mu.Unlock()
	res, err := http.Get(e.srv.URL() + "/sandboxes/" + id + "/proxy/9000/sse")
	require.NoError(t, err)
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	first := make(chan string, 1)
	go func() { l, _ := rd.ReadString('\n'); first <- l }()
	select {
	case l := <-first:
		assert.Contains(t, l, `"first"`)
	case <-time.After(5 * time.Second):
		t.Fatal("server proxy buffered the SSE stream")
	}
	close(release)
	_, _ = io.ReadAll(rd)
}

func TestServerProxyStripsCredentials(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	sb := e.rt.byID(id)
	for _, prefix := range []string{"", "/v1"} {
		req, _ := http.NewRequest("POST", e.srv.URL()+prefix+"/sandboxes/"+id+"/proxy/9000/echo/deep?x=1&y=2", strings.NewReader("payload"))
		req.Header.Set("Authorization", "Bearer secret-bearer")
		req.Header.Set("Cookie", "session=secret-cookie")
		req.Header.Set(headerAPIKey, testKey)
		req.Header.Set("X-Custom", "kept")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
		assert.JSONEq(t, `{"ok":true}`, string(body))
		got, ok := sb.lastProxied()
		require.True(t, ok)
		assert.Equal(t, "POST", got.Method)
		assert.Equal(t, "/proxy/9000/echo/deep", got.Path)
		assert.Equal(t, "x=1&y=2", got.Query)
		assert.Equal(t, "payload", got.Body)
		assert.Empty(t, got.Headers.Get("Authorization"))
		assert.Empty(t, got.Headers.Get("Cookie"))
		assert.Empty(t, got.Headers.Get(headerAPIKey))
		assert.Equal(t, "kept", got.Headers.Get("X-Custom"))
		assert.NotEmpty(t, got.Headers.Get("X-Forwarded-For"))
		assert.Equal(t, e.srv.Domain(), got.Headers.Get("X-Forwarded-Host"))
		assert.Equal(t, "http", got.Headers.Get("X-Forwarded-Proto"))
	}
	// port 44772 goes to execd itself
	res, err := http.Get(e.srv.URL() + "/sandboxes/" + id + "/proxy/44772/ping")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	r := e.call("GET", "/sandboxes/"+id+"/proxy/9999/x", nil, map[string]string{headerAPIKey: ""})
	assert.Equal(t, http.StatusBadGateway, r.Status)
	assert.Equal(t, "GENERAL::UNKNOWN_ERROR", r.JSON(t)["code"])
	assert.Contains(t, r.JSON(t)["message"], "Could not connect to the backend sandbox")
	r = e.call("GET", "/sandboxes/nope/proxy/9000/x", nil, map[string]string{headerAPIKey: ""})
	assert.Equal(t, http.StatusNotFound, r.Status)
	r = e.call("GET", "/sandboxes/"+id+"/proxy/9000/x", nil, map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"})
	assert.Equal(t, http.StatusBadRequest, r.Status)
	// backend gone entirely → 502
	sb.srv.CloseClientConnections()
	sb.srv.Close()
	r = e.call("GET", "/sandboxes/"+id+"/proxy/44772/ping", nil, nil)
	assert.Equal(t, http.StatusBadGateway, r.Status)
	assert.Equal(t, "GENERAL::UNKNOWN_ERROR", r.JSON(t)["code"])
}

// An upload sent with "Expect: 100-continue" (curl does so for bodies above
// 1 MiB) gets execd's answer, straight and through the server proxy, and is
// audited with it. The interim 100 was once taken for the final status: the
// audit tee was closed under the proxy, which answered 502.
func TestExecdUploadExpectContinue(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<17) // 2 MiB
	for name, url := range map[string]string{
		"endpoint":     "http://" + e.execdAddr(id) + "/files/upload",
		"server proxy": e.srv.URL() + "/sandboxes/" + id + "/proxy/44772/files/upload",
	} {
		path := "/workspace/" + strings.ReplaceAll(name, " ", "-") + ".bin"
		ct, body := multipartUpload(t, map[string][]byte{path: big}, []string{path})
		req, err := http.NewRequest("POST", url, body)
		require.NoError(t, err)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Expect", "100-continue")
		res, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
		require.NoError(t, err, name)
		msg, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", name, msg)

		var got *wire.File
		for _, ev := range e.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindFile}) {
			if ev.File.Path == path {
				got = ev.File
			}
		}
		require.NotNil(t, got, name)
		assert.Equal(t, http.StatusOK, got.Status, name)
		assert.Equal(t, int64(len(big)), got.Size, name)
		sb := e.rt.byID(id)
		sb.mu.Lock()
		assert.Equal(t, big, sb.files[path], name)
		sb.mu.Unlock()
	}
	for _, ev := range e.srv.AuditQuery(audit.Query{Kind: wire.KindLifecycle}) {
		if ev.Lifecycle != nil {
			assert.NotEqual(t, http.StatusContinue, ev.Lifecycle.Status, "an interim 100 is never a recorded status")
		}
	}
}

func multipartUpload(t *testing.T, files map[string][]byte, order []string) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range order {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="metadata"; filename="metadata"`)
		h.Set("Content-Type", "application/json")
		w, err := mw.CreatePart(h)
		require.NoError(t, err)
		_, _ = w.Write([]byte(`{"path":"` + p + `"}`))
		fw, err := mw.CreateFormFile("file", filepath.Base(p))
		require.NoError(t, err)
		_, _ = fw.Write(files[p])
	}
	require.NoError(t, mw.Close())
	return mw.FormDataContentType(), &buf
}

func TestExecdFileAudit(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	base := "http://" + e.execdAddr(id)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	files := map[string][]byte{"/workspace/data.csv": []byte("a,b\n1,2\n"), "/workspace/big.bin": big}
	ct, body := multipartUpload(t, files, []string{"/workspace/data.csv", "/workspace/big.bin"})
	res, err := http.Post(base+"/files/upload", ct, body)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	res, err = http.Get(base + "/files/download?path=/workspace/big.bin")
	require.NoError(t, err)
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, big, got)
	res, err = http.Get(base + "/files/download?path=/workspace/missing")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
	req, _ := http.NewRequest("DELETE", base+"/files?path=/workspace/a&path=/workspace/b", nil)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()

	var evs []*wire.File
	for _, ev := range e.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindFile}) {
		evs = append(evs, ev.File)
	}
	require.Len(t, evs, 6)
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	assert.Equal(t, wire.File{Op: "upload", Path: "/workspace/data.csv", Size: 8, SHA256: sum(files["/workspace/data.csv"]), Status: 200}, *evs[0])
	assert.Equal(t, wire.File{Op: "upload", Path: "/workspace/big.bin", Size: int64(len(big)), SHA256: sum(big), Status: 200}, *evs[1])
	assert.Equal(t, wire.File{Op: "download", Path: "/workspace/big.bin", Size: int64(len(big)), SHA256: sum(big), Status: 200}, *evs[2])
	assert.Equal(t, wire.File{Op: "download", Path: "/workspace/missing", Status: 404}, *evs[3])
	assert.Equal(t, "delete", evs[4].Op)
	assert.Equal(t, "/workspace/b", evs[5].Path)
	// the backend received the files intact
	sb := e.rt.byID(id)
	sb.mu.Lock()
	assert.Equal(t, big, sb.files["/workspace/big.bin"])
	sb.mu.Unlock()
}

// egressGet GETs url with the egress API's auth header: the status and body.
func egressGet(t testing.TB, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	req.Header.Set("OPENSANDBOX-EGRESS-AUTH", token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, b
}

func TestExecdEgressRoute(t *testing.T) {
	e := newEnv(t, withEgress(newFakeEgress()))
	id := e.create(func(m map[string]any) { m["networkPolicy"] = map[string]any{"defaultAction": "deny"} })
	ep := e.call("GET", "/v1/sandboxes/"+id+"/endpoints/18080", nil, nil).JSON(t)
	token := ep["headers"].(map[string]any)["OPENSANDBOX-EGRESS-AUTH"].(string)
	_, b := egressGet(t, "http://"+ep["endpoint"].(string)+"/policy", token)
	assert.JSONEq(t, `{"egress":true,"path":"/policy"}`, string(b))
	// and via the server proxy (the caller sends the egress header itself)
	_, b = egressGet(t, e.srv.URL()+"/sandboxes/"+id+"/proxy/18080/policy", token)
	assert.JSONEq(t, `{"egress":true,"path":"/policy"}`, string(b))
	// the sandbox got the gateway socket, CA file and env
	spec := e.rt.byID(id).spec
	assert.NotEmpty(t, spec.GatewaySocket)
	assert.Contains(t, spec.ExtraFiles, "/etc/ssl/certs/ca-certificates.crt")
	assert.Equal(t, "/etc/ssl/certs/ca-certificates.crt", spec.Env["SSL_CERT_FILE"])
}

func TestAuditJSONLNeverHoldsSecrets(t *testing.T) {
	e := newEnv(t)
	secretEnv := "env-secret-value-7d1c"
	id := e.create(func(m map[string]any) {
		m["env"] = map[string]string{"DATA_TOKEN": secretEnv}
		m["image"] = map[string]any{"uri": "python:3.11", "auth": map[string]string{"username": "u", "password": "registry-pass-99"}}
	})
	e.call("GET", "/v1/sandboxes", nil, map[string]string{headerAPIKey: "wrong-key-abc"})
	e.call("POST", "/v1/sandboxes/"+id+"/renew-expiration", map[string]string{"expiresAt": formatTime(e.clock.Now().Add(time.Hour))}, nil)
	e.call("DELETE", "/v1/sandboxes/"+id, nil, nil)
	require.NoError(t, e.srv.Close())
	raw, err := os.ReadFile(e.auditFile())
	require.NoError(t, err)
	for _, secret := range []string{testKey, secretEnv, "registry-pass-99", "wrong-key-abc"} {
		assert.NotContains(t, string(raw), secret)
	}
	assert.Contains(t, string(raw), Fingerprint(testKey))
	assert.Contains(t, string(raw), Fingerprint("wrong-key-abc"))

	var creates int
	sc := bufio.NewScanner(bytes.NewReader(raw))
	var last int64
	for sc.Scan() {
		var ev wire.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		assert.Greater(t, ev.Seq, last)
		last = ev.Seq
		if ev.Kind == wire.KindLifecycle && ev.Lifecycle.Method == "POST" && ev.Lifecycle.Path == "/v1/sandboxes" {
			creates++
			assert.Equal(t, id, ev.SandboxID)
			assert.Equal(t, 202, ev.Lifecycle.Status)
			var body map[string]any
			require.NoError(t, json.Unmarshal(ev.Lifecycle.Body, &body))
			assert.Equal(t, "sha256:"+Fingerprint(secretEnv), body["env"].(map[string]any)["DATA_TOKEN"])
			assert.NotEmpty(t, ev.Lifecycle.RequestID)
		}
	}
	assert.Equal(t, 1, creates)
}

func TestAdminAPI(t *testing.T) {
	eg := newFakeEgress()
	e := newEnv(t, withEgress(eg))
	id := e.create(nil)

	for _, tok := range []string{"", "wrong"} {
		r := e.call("GET", "/_mock/info", nil, map[string]string{headerAdminToken: tok})
		assert.Equal(t, http.StatusUnauthorized, r.Status)
		assert.NotEmpty(t, r.JSON(t)["code"])
	}
	r := e.admin("GET", "/_mock/info", nil)
	require.Equal(t, http.StatusOK, r.Status)
	info := r.JSON(t)
	assert.Equal(t, map[string]any{"enforced": false, "reason": "fake runtime (tests)"}, info["isolation"])
	assert.Equal(t, "writable_directories", info["snapshots"])
	assert.Contains(t, info, "limits")

	r = e.admin("GET", "/_mock/audit?sandbox_id="+id+"&kind=state", nil)
	var a struct{ Events []wire.Event }
	require.NoError(t, json.Unmarshal(r.Body, &a))
	require.Len(t, a.Events, 1)
	since := a.Events[0].Seq
	assert.Equal(t, http.StatusBadRequest, e.admin("GET", "/_mock/audit?since=x", nil).Status)

	r = e.admin("POST", "/_mock/sandboxes/"+id+"/expire", nil)
	assert.Equal(t, http.StatusNoContent, r.Status)
	assert.Equal(t, http.StatusNotFound, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status)
	assert.True(t, e.rt.byID(id).isDestroyed())
	assert.Equal(t, http.StatusNotFound, e.admin("POST", "/_mock/sandboxes/"+id+"/expire", nil).Status)
	r = e.admin("GET", "/_mock/audit?sandbox_id="+id+"&kind=state&since="+itoa(int(since)), nil)
	require.NoError(t, json.Unmarshal(r.Body, &a))
	require.Len(t, a.Events, 1)
	assert.Equal(t, "expired by admin", a.Events[0].State.Reason)

	r = e.admin("POST", "/_mock/faults/egress-deny", map[string]any{"targets": []string{"pypi.org", "*.pythonhosted.org"}})
	assert.Equal(t, http.StatusNoContent, r.Status)
	assert.Equal(t, []string{"pypi.org", "*.pythonhosted.org"}, eg.overrideNow())
	assert.Equal(t, http.StatusBadRequest, e.admin("POST", "/_mock/faults/egress-deny", map[string]any{"targets": []string{}}).Status)
	r = e.admin("DELETE", "/_mock/faults/egress-deny", nil)
	assert.Equal(t, http.StatusNoContent, r.Status)
	assert.Nil(t, eg.overrideNow())
	faults := e.srv.AuditQuery(audit.Query{Kind: wire.KindFault})
	assert.GreaterOrEqual(t, len(faults), 3)

	r = e.admin("GET", "/_mock/sandboxes", nil)
	var list struct{ Sandboxes []SandboxInfo }
	require.NoError(t, json.Unmarshal(r.Body, &list))
	require.Len(t, list.Sandboxes, 1)
	assert.True(t, list.Sandboxes[0].Expired)
	assert.Equal(t, "Expired", list.Sandboxes[0].State)
	assert.NotEmpty(t, list.Sandboxes[0].Request)

	assert.Equal(t, http.StatusNotFound, e.admin("GET", "/_mock/nothing", nil).Status)
	assert.Equal(t, http.StatusNotFound, e.admin("GET", "/_mock/sandboxes/nope/canary-scan", nil).Status)
}

func TestAdminDisabledWithoutToken(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AdminToken = "" })
	r := e.call("GET", "/_mock/info", nil, map[string]string{headerAdminToken: "anything"})
	assert.Equal(t, http.StatusUnauthorized, r.Status)
	assert.Equal(t, "MOCK::ADMIN_DISABLED", r.JSON(t)["code"])
}

func TestAdminEgressDenyWithoutEgress(t *testing.T) {
	e := newEnv(t)
	r := e.admin("POST", "/_mock/faults/egress-deny", map[string]any{"targets": []string{"pypi.org"}})
	assert.Equal(t, http.StatusConflict, r.Status)
}

func TestCanaryScan(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	sb := e.rt.byID(id)
	const inEnv, inFile, inOutput, inCmd, nowhere = "canary-env-111111", "canary-file-222222", "canary-out-333333", "canary-cmd-444444", "canary-none-555555"

	// a sandbox process carrying a canary in its environment
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LEAKED=" + inEnv}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sb.mu.Lock()
	sb.pids = []int{cmd.Process.Pid}
	sb.mu.Unlock()
	require.NoError(t, os.MkdirAll(filepath.Join(sb.Dir(), "workspace", "out"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(sb.Dir(), "workspace", "out", "report.md"), []byte("token: "+inFile), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(sb.Dir(), "tmp", "enc.txt"), []byte(base64.StdEncoding.EncodeToString([]byte(inFile))), 0o600))

	base := "http://" + e.execdAddr(id)
	res := postJSON(t, base+"/command", map[string]any{"command": "echo " + inOutput}, nil)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	res = postJSON(t, base+"/command", map[string]any{"command": "curl -H 'X: " + inCmd + "' x"}, nil)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()

	// Planted in two parts, as two submissions graded at once do: POST adds
	// to the set (a PUT replaces it), so both parts are scanned for.
	r := e.admin("PUT", "/_mock/canaries", map[string]any{"canaries": map[string]string{
		"env": inEnv, "file": inFile, "none": nowhere}})
	require.Equal(t, http.StatusNoContent, r.Status)
	r = e.admin("POST", "/_mock/canaries", map[string]any{"canaries": map[string]string{
		"output": inOutput, "cmd": inCmd}})
	require.Equal(t, http.StatusNoContent, r.Status)
	assert.Equal(t, http.StatusBadRequest, e.admin("PUT", "/_mock/canaries", map[string]any{"canaries": map[string]string{"x": "ab"}}).Status)

	r = e.admin("GET", "/_mock/sandboxes/"+id+"/canary-scan", nil)
	require.Equal(t, http.StatusOK, r.Status)
	for _, v := range []string{inEnv, inFile, inOutput, inCmd} {
		assert.NotContains(t, string(r.Body), v, "findings must never carry the canary value")
	}
	var out struct{ Findings []wire.Canary }
	require.NoError(t, json.Unmarshal(r.Body, &out))
	has := func(label, loc, whereSub string) bool {
		for _, f := range out.Findings {
			if f.Label == label && f.Location == loc && strings.Contains(f.Where, whereSub) {
				return true
			}
		}
		return false
	}
	assert.True(t, has("env", "env", "LEAKED"), "%+v", out.Findings)
	assert.True(t, has("file", "file", "/workspace/out/report.md"), "%+v", out.Findings)
	assert.True(t, has("file", "file", "/tmp/enc.txt (base64)"), "%+v", out.Findings)
	assert.True(t, has("output", "output", "stdout"), "%+v", out.Findings)
	assert.True(t, has("cmd", "command", ""), "%+v", out.Findings)
	for _, f := range out.Findings {
		assert.NotEqual(t, "none", f.Label)
	}
	assert.NotEmpty(t, e.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCanary}))
}
