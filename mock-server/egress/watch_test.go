package egress

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
)

// TestGatewayRecordsForwardedRequests: every request the gateway forwards to
// an allowed host is recorded with the sandbox that sent it, its method,
// path, body size and hash, and the watched values it carried (a planted
// secret in a header, an input marker in an upload's body, base64 too);
// a plain GET carries none.
func TestGatewayRecordsForwardedRequests(t *testing.T) {
	const marker = "capstone-marker-3f9a1c77e2"
	const secret = "osb-platform-key-0123456789"
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"},
		watched: func() map[string]string {
			return map[string]string{"input_marker_run1": marker, "platform_api_key": secret}
		}})

	resp, err := e.relayClient().Get("http://pypi.org/simple/pandas/")
	require.NoError(t, err)
	readAll(t, resp)

	body := "region,revenue\nNorth,120\n" + marker + "\n"
	resp, err = e.relayClient().Post("http://pypi.org/legacy/upload", "text/csv", strings.NewReader(body))
	require.NoError(t, err)
	readAll(t, resp)

	req, _ := http.NewRequest("POST", "https://pypi.org/collect", strings.NewReader(base64.StdEncoding.EncodeToString([]byte(marker))))
	req.Header.Set("X-Api-Key", secret)
	resp, err = e.relayClient().Do(req)
	require.NoError(t, err)
	readAll(t, resp)

	evs := e.rec.kind(audit.KindEgressRequest)
	require.Len(t, evs, 3)
	for _, ev := range evs {
		assert.Equal(t, "sbx-test-1", ev.SandboxID, "attributed to the sandbox by the gateway, never by time")
		assert.Equal(t, "pypi.org", ev.EgressRequest.Host)
		assert.Equal(t, "none", ev.EgressRequest.Authorization)
		assert.NotZero(t, ev.EgressRequest.Status)
	}
	get, upload, collect := evs[0].EgressRequest, evs[1].EgressRequest, evs[2].EgressRequest
	assert.Equal(t, "GET", get.Method)
	assert.Equal(t, "/simple/pandas/", get.Path)
	assert.Zero(t, get.BodyBytes)
	assert.Empty(t, get.Watched)

	assert.Equal(t, "POST", upload.Method)
	assert.Equal(t, int64(len(body)), upload.BodyBytes)
	assert.Len(t, upload.BodySHA256, 64)
	assert.Equal(t, []string{"input_marker_run1 in body"}, upload.Watched)

	assert.Equal(t, []string{"input_marker_run1 in body (base64)", "platform_api_key in headers"}, collect.Watched)
	for _, ev := range e.rec.all() {
		b, _ := jsonOf(ev)
		assert.NotContains(t, b, secret, "the audit never holds a watched value")
	}
}

func jsonOf(ev audit.Event) (string, error) {
	b, err := json.Marshal(ev)
	return string(b), err
}
