package observe

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fake lifecycle server that checks what the proxy forwards.
func fakeServer(t *testing.T) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/sandboxes":
			body, _ := io.ReadAll(r.Body)
			var m map[string]any
			require.NoError(t, json.Unmarshal(body, &m), "the body reaches the server intact")
			assert.Equal(t, "real-secret-token", m["env"].(map[string]any)["TOKEN"], "the server gets the real value")
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"id":"11111111-2222-3333-4444-555555555555","status":{"state":"Running"}}`))
		case r.Method == "DELETE":
			w.WriteHeader(http.StatusNoContent)
		case strings.Contains(r.URL.Path, "/proxy/"):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("{\"type\":\"init\"}\n\n"))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":"X","message":"y"}`))
		}
	}))
}

func TestProxyRecordsLifecycleCalls(t *testing.T) {
	srv := fakeServer(t)
	defer srv.Close()
	p, err := Start(srv.URL + "/v1")
	require.NoError(t, err)
	defer p.Close()
	assert.NotContains(t, p.Domain(), "://", "OPEN_SANDBOX_DOMAIN carries no scheme")

	base := "http://" + p.Domain()
	req, _ := http.NewRequest("POST", base+"/v1/sandboxes", bytes.NewReader([]byte(`{"image":{"uri":"python:3.12","auth":{"username":"u","password":"p"}},"env":{"TOKEN":"real-secret-token"},"networkPolicy":{"defaultAction":"deny"}}`)))
	req.Header.Set("OPEN-SANDBOX-API-KEY", "the-key")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, res.StatusCode)
	res.Body.Close()

	req, _ = http.NewRequest("DELETE", base+"/v1/sandboxes/11111111-2222-3333-4444-555555555555", nil)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	res, err = http.Get(base + "/sandboxes/11111111-2222-3333-4444-555555555555/proxy/44772/command")
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Contains(t, string(b), `"init"`, "the server proxy route passes through")

	calls := p.Calls()
	require.Len(t, calls, 2, "server-proxy traffic is not a lifecycle call: %+v", calls)
	c := calls[0]
	assert.Equal(t, "POST", c.Method)
	assert.Equal(t, 202, c.Status)
	assert.Equal(t, "11111111-2222-3333-4444-555555555555", c.SandboxID)
	assert.Equal(t, Fingerprint("the-key"), c.KeyFingerprint)
	assert.NotContains(t, string(c.Body), "real-secret-token")
	assert.NotContains(t, string(c.Body), `"p"`)
	assert.Contains(t, string(c.Body), `"defaultAction":"deny"`)
	assert.Contains(t, string(c.Body), "sha256:"+Fingerprint("real-secret-token"))
	assert.Equal(t, "DELETE", calls[1].Method)
	assert.Equal(t, 204, calls[1].Status)
	assert.Equal(t, "11111111-2222-3333-4444-555555555555", calls[1].SandboxID)
}

func TestStartRejectsBadTargets(t *testing.T) {
	for _, bad := range []string{"", "ftp://x", "localhost:8080", "http://"} {
		_, err := Start(bad)
		assert.Error(t, err, bad)
	}
}

// TestProxyCallsWhileCallsArrive: Calls is asked while other subjects'
// lifecycle calls keep arriving (one run's steps read the record while the
// next run creates). A WaitGroup waited on meanwhile panicked ("WaitGroup is
// reused before previous Wait has returned"), killing a real-target run.
func TestProxyCallsWhileCallsArrive(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	p, err := Start(srv.URL + "/v1")
	require.NoError(t, err)
	defer p.Close()
	base := "http://" + p.Domain()

	const clients, each = 4, 50
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				req, _ := http.NewRequest("DELETE", base+"/v1/sandboxes/11111111-2222-3333-4444-555555555555", nil)
				if res, err := http.DefaultClient.Do(req); err == nil {
					res.Body.Close()
				}
			}
		}()
	}
	stop := make(chan struct{})
	readers := sync.WaitGroup{}
	for i := 0; i < 4; i++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_ = p.Calls()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	assert.Len(t, p.Calls(), clients*each, "every call is recorded once the clients are done")
}
