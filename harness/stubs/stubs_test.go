package stubs

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

func do(t *testing.T, method, url string, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client(strings.TrimPrefix(strings.SplitN(url, "/", 4)[2], "")).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestDataAPIRecordsCredential(t *testing.T) {
	const real = "real-token-6d1f9a"
	d, err := NewDataAPI(real)
	require.NoError(t, err)
	defer d.Close()
	url := d.URL() + DataAPIPath

	code, _ := do(t, "GET", url, "", nil)
	assert.Equal(t, 401, code)
	assert.False(t, d.ReceivedReal())

	code, body := do(t, "GET", url, "", map[string]string{"Authorization": "Bearer osb-vault-placeholder"})
	assert.Equal(t, 401, code)
	assert.Contains(t, body, `"credential":"fake"`)
	assert.True(t, d.ReceivedFake())

	code, _ = do(t, "GET", url, "", map[string]string{"Authorization": "Basic " + real})
	assert.Equal(t, 401, code)

	code, body = do(t, "GET", url, "", map[string]string{"Authorization": "Bearer " + real})
	assert.Equal(t, 200, code)
	var ds Dataset
	require.NoError(t, json.Unmarshal([]byte(body), &ds))
	assert.Equal(t, TheDataset, ds)
	assert.True(t, d.ReceivedReal())

	code, _ = do(t, "GET", d.URL()+"/v1/other", "", map[string]string{"Authorization": "Bearer " + real})
	assert.Equal(t, 404, code)
	code, _ = do(t, "POST", url, "x", map[string]string{"Authorization": "Bearer " + real})
	assert.Equal(t, 405, code)

	assert.Equal(t, map[string]int{CredentialNone: 1, CredentialFake: 1, CredentialMalformed: 1, CredentialReal: 3}, d.Counts())
	logJSON, err := json.Marshal(d.Requests())
	require.NoError(t, err)
	assert.NotContains(t, string(logJSON), real, "the log never holds the token")
	reqs := d.Requests()
	assert.Empty(t, reqs[0].CredentialFingerprint)
	assert.Len(t, reqs[1].CredentialFingerprint, 12)

	_, err = NewDataAPI("")
	assert.Error(t, err)
}

func TestExfilRecordsEverything(t *testing.T) {
	e, err := NewExfil()
	require.NoError(t, err)
	defer e.Close()
	assert.Equal(t, 0, e.Len())
	big := strings.Repeat("order_id,revenue\n", 200)
	code, _ := do(t, "POST", "http://"+e.Addr()+"/collect?src=csv", big, map[string]string{"Host": ExfilHost})
	assert.Equal(t, 200, code)
	code, _ = do(t, "GET", e.URL()+"/ping", "", nil)
	assert.Equal(t, 200, code)
	reqs := e.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "/collect", reqs[0].Path)
	assert.Equal(t, "src=csv", reqs[0].Query)
	assert.EqualValues(t, len(big), reqs[0].BodyBytes)
	assert.Len(t, reqs[0].BodySHA256, 64)
	assert.Len(t, reqs[0].BodyPrefix, MaxExfilPrefix)
	assert.Equal(t, "GET", reqs[1].Method)
	assert.Empty(t, e.LeakedCanaries())
	e.Reset()
	assert.Equal(t, 0, e.Len())
}

func TestExfilFindsAndRedactsCanaries(t *testing.T) {
	e, err := NewExfil()
	require.NoError(t, err)
	defer e.Close()
	const token, key = "tok-SECRET-91f3", "osb-key-77aa"
	e.Watch(map[string]string{"data_api_token": token, "api_key": key, "empty": ""})
	// The token lands across the 32 KiB read boundary of the body.
	body := strings.Repeat("x", 32*1024-5) + token + strings.Repeat("y", 100)
	code, _ := do(t, "POST", e.URL()+"/collect?k="+key, body, nil)
	assert.Equal(t, 200, code)
	code, _ = do(t, "POST", e.URL()+"/collect", "nothing here", nil)
	assert.Equal(t, 200, code)
	reqs := e.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"api_key", "data_api_token"}, reqs[0].Canaries)
	assert.Equal(t, "k=[REDACTED:api_key]", reqs[0].Query)
	assert.Empty(t, reqs[1].Canaries)
	assert.Equal(t, []string{"api_key", "data_api_token"}, e.LeakedCanaries())
	logJSON, err := json.Marshal(reqs)
	require.NoError(t, err)
	assert.NotContains(t, string(logJSON), token)
	assert.NotContains(t, string(logJSON), key)
}

func TestCSVServerStreamsFile(t *testing.T) {
	c, err := NewCSVServer()
	require.NoError(t, err)
	defer c.Close()
	p := filepath.Join(t.TempDir(), "sales data.csv")
	require.NoError(t, os.WriteFile(p, []byte("a,b\n1,2\n"), 0o644))
	u, err := c.Add(p)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(u, "http://127.0.0.1:"))
	assert.Contains(t, u, "sales%20data.csv")
	code, body := do(t, "GET", u, "", nil)
	assert.Equal(t, 200, code)
	assert.Equal(t, "a,b\n1,2\n", body)
	code, body = do(t, "GET", u, "", map[string]string{"Range": "bytes=4-"})
	assert.Equal(t, 206, code)
	assert.Equal(t, "1,2\n", body)
	code, _ = do(t, "GET", c.URL()+"/data/9/x.csv", "", nil)
	assert.Equal(t, 404, code)
	_, err = c.Add(t.TempDir())
	assert.Error(t, err)
	assert.Equal(t, 3, c.Len())
}

func TestSetUpstreams(t *testing.T) {
	s, err := Start(Config{WheelsDir: t.TempDir(), DataAPIToken: "tok"})
	require.NoError(t, err)
	up := s.Upstreams()
	assert.Equal(t, s.Index.URL(), up["pypi.org"])
	assert.Equal(t, s.Index.URL(), up["files.pythonhosted.org"])
	assert.Equal(t, s.DataAPI.URL(), up["data-api.capstone.test"])
	assert.Equal(t, s.Exfil.URL(), up["exfil.capstone.test"])
	for host, u := range up {
		assert.Equal(t, strings.ToLower(host), host)
		assert.True(t, strings.HasPrefix(u, "http://127.0.0.1:"), u)
	}
	code, _ := do(t, "GET", up["exfil.capstone.test"]+"/x", "", nil)
	assert.Equal(t, 200, code)
	s.ResetLogs()
	assert.Equal(t, 0, s.Exfil.Len())
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	_, err = http.Get(up["exfil.capstone.test"] + "/x")
	assert.Error(t, err, "closed")

	_, err = Start(Config{WheelsDir: t.TempDir()})
	assert.Error(t, err, "a data API without a token is refused")
}

// TestStubsWatchUploads: every stub looks for the watched values (a run's
// input marker) in what it receives, in any encoding, and says whether the
// request came through the egress gateway (its sandbox) or not.
func TestStubsWatchUploads(t *testing.T) {
	s, err := Start(Config{WheelsDir: t.TempDir(), DataAPIToken: "tok-real-0123456789"})
	require.NoError(t, err)
	defer s.Close()
	const marker = "ORD-000107-cm7f3a9c2e41b8d05e"
	s.Watch(map[string]string{"input_run_sales": marker})
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write([]byte("order_id,revenue\n" + marker + ",2.50\n"))
	require.NoError(t, w.Close())

	code, _ := do(t, "POST", s.Index.URL()+"/legacy/", gz.String(), map[string]string{"Content-Encoding": "gzip", wire.EgressSandboxHeader: "sbx-1"})
	assert.Equal(t, 404, code)
	code, _ = do(t, "POST", s.Exfil.URL()+"/collect", base64.StdEncoding.EncodeToString([]byte("x,"+marker+"\n")), nil)
	assert.Equal(t, 200, code)
	code, _ = do(t, "GET", s.Index.URL()+"/simple/", "", nil)
	assert.Equal(t, 200, code)

	idx := s.Index.Requests()
	require.Len(t, idx, 2)
	assert.Equal(t, []string{"input_run_sales in body (gzip)"}, idx[0].Canaries)
	assert.Equal(t, "sbx-1", idx[0].EgressSandbox, "forwarded by the gateway for sbx-1")
	assert.Empty(t, idx[1].Canaries)
	assert.Empty(t, idx[1].EgressSandbox, "not through the gateway")
	ex := s.Exfil.Requests()
	require.Len(t, ex, 1)
	assert.Equal(t, []string{"input_run_sales in body (base64)"}, ex[0].Canaries)
	assert.Empty(t, ex[0].EgressSandbox)
}
