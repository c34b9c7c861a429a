package egress

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/wire"
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

	evs := e.rec.kind(wire.KindEgressRequest)
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

func jsonOf(ev wire.Event) (string, error) {
	b, err := json.Marshal(ev)
	return string(b), err
}

// TestGatewaySeesTransformedUploads: the input leaving re-encoded as a whole
// (base64 of the CSV, the marker at any offset in it; a gzip-compressed
// body) still carries the run's marker on record; the stub upstream is told
// which sandbox the request came from, and a sandbox cannot claim another.
func TestGatewaySeesTransformedUploads(t *testing.T) {
	const marker = "ORD-000101-cm0123456789abcdef"
	e := newEnv(t, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"},
		watched: func() map[string]string { return map[string]string{"input_run_1_sales": marker} }})
	csv := "order_id,region,revenue\nORD-000100,North,1.00\n" + marker + ",South,2.50\n"
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte(csv))
	require.NoError(t, w.Close())
	for _, body := range []string{base64.StdEncoding.EncodeToString([]byte(csv)), base64.StdEncoding.EncodeToString([]byte("x" + csv)), gz.String()} {
		req, _ := http.NewRequest("POST", "http://pypi.org/legacy/", strings.NewReader(body))
		req.Header.Set(wire.EgressSandboxHeader, "sbx-someone-else")
		resp, err := e.relayClient().Do(req)
		require.NoError(t, err)
		readAll(t, resp)
	}
	// A row sent out in a download's path (no upload at all), base64url.
	resp, err := e.relayClient().Get("http://pypi.org/simple/" + base64.RawURLEncoding.EncodeToString([]byte("r,"+marker+",South")) + "/")
	require.NoError(t, err)
	readAll(t, resp)
	evs := e.rec.kind(wire.KindEgressRequest)
	require.Len(t, evs, 4)
	require.Len(t, evs[3].EgressRequest.Watched, 1)
	assert.True(t, strings.HasPrefix(evs[3].EgressRequest.Watched[0], "input_run_1_sales in path (base64"), evs[3].EgressRequest.Watched)
	evs = evs[:3]
	assert.Equal(t, []string{"input_run_1_sales in body (base64)"}, evs[0].EgressRequest.Watched)
	assert.Equal(t, []string{"input_run_1_sales in body (base64)"}, evs[1].EgressRequest.Watched, "another alignment")
	assert.Equal(t, []string{"input_run_1_sales in body (gzip)"}, evs[2].EgressRequest.Watched)
	var sawSandbox []string
	st := e.stubs["pypi.org"]
	st.mu.Lock()
	for _, r := range st.reqs {
		sawSandbox = append(sawSandbox, r.Header.Values(wire.EgressSandboxHeader)...)
	}
	st.mu.Unlock()
	assert.Equal(t, []string{"sbx-test-1", "sbx-test-1", "sbx-test-1", "sbx-test-1"}, sawSandbox, "the gateway names the sender; the sandbox's own header is replaced")
}
