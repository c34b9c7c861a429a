package mockserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/egress"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealRuntimeReadyMeansSidecarListens hammers create → vault → curl with
// no pause: a sandbox is Running only once its egress sidecar listens, so
// the first request through the credential proxy never meets "could not
// connect" (it once did, 14 ms after create, while the sidecar was still
// binding in a goroutine) and arrives at the stub with the vault's token.
func TestRealRuntimeReadyMeansSidecarListens(t *testing.T) {
	if testing.Short() {
		t.Skip("real runtime: skipped in -short mode")
	}
	const secret = "READY-TOKEN-5b1e"
	var mu sync.Mutex
	var seen []string
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.URL.Path == "/v1/data" {
			seen = append(seen, r.Header.Get("Authorization"))
		}
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	defer stub.Close()

	dir := t.TempDir()
	rt, err := runtime.NewLinux(runtime.Options{StateDir: dir})
	if err != nil {
		t.Skipf("real runtime not available here: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	if ok, reason := rt.Isolation(); !ok {
		t.Skipf("the egress sidecar needs the isolating runtime: %s", reason)
	}
	hub, err := egress.NewHub(egress.HubConfig{StateDir: dir, Audit: audit.RecorderFunc(func(wire.Event) {}),
		Upstreams: map[string]string{"api.data.test": stub.URL}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = hub.Close() })
	srv, err := New(Config{APIKey: testKey, AdminToken: testAdmin, StateDir: dir, Runtime: rt, Egress: EgressAdapter{Hub: hub}})
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	t.Cleanup(func() { _ = srv.Close() })

	vault := `{"credentials":[{"name":"t","source":{"type":"inline","value":"` + secret + `"}}],` +
		`"bindings":[{"name":"b","match":{"hosts":["api.data.test"],"schemes":["http"],"ports":[80]},"auth":{"type":"bearer","credential":"t"}}]}`
	const rounds = 8
	for i := 0; i < rounds; i++ {
		body := validCreate()
		body["networkPolicy"] = map[string]any{"defaultAction": "deny", "egress": []any{map[string]string{"action": "allow", "target": "api.data.test"}}}
		body["credentialProxy"] = map[string]any{"enabled": true}
		id, base := createSandbox(t, srv, body)
		// At once, before anything else: the relay must already listen.
		out, code := runCommand(t, base, "curl -sS -o /dev/null -w '%{http_code}' http://api.data.test/v1/first; echo \" exit=$?\"")
		require.NotNil(t, code)
		assert.Equal(t, "200 exit=0", strings.TrimSpace(strings.Join(out, "")), "round %d: the first request after create", i)
		_, ep := apiDo(t, srv, "GET", "/v1/sandboxes/"+id+"/endpoints/18080", nil)
		token := ep["headers"].(map[string]any)["OPENSANDBOX-EGRESS-AUTH"].(string)
		req, _ := http.NewRequest("POST", "http://"+ep["endpoint"].(string)+"/credential-vault", bytes.NewReader([]byte(vault)))
		req.Header.Set("OPENSANDBOX-EGRESS-AUTH", token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Less(t, res.StatusCode, 300, "vault: %s", b)
		out, code = runCommand(t, base, "curl -sS -o /dev/null -w '%{http_code}' http://api.data.test/v1/data; echo \" exit=$?\"")
		require.NotNil(t, code)
		assert.Equal(t, "200 exit=0", strings.TrimSpace(strings.Join(out, "")), "round %d: through the vault", i)
		apiDo(t, srv, "DELETE", "/v1/sandboxes/"+id, nil)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, rounds)
	for i, a := range seen {
		assert.Equal(t, "Bearer "+secret, a, fmt.Sprintf("request %d reached the stub with the vault's token", i))
	}
}
