package observe

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProxyRecordsTheAnswersContract: each lifecycle exchange keeps when it
// ended, the state its answer gave, its body's shape (no values), a 4xx's
// error code and the answer's header names (per-answer ones left out).
func TestProxyRecordsTheAnswersContract(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "r-1")
		switch r.Method {
		case "POST":
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"id":"11111111-2222-3333-4444-555555555555","metadata":{"k":"v"},"status":{"state":"Running","reason":"CONTAINER_RUNNING"},"entrypoint":["a","b"],"expiresAt":null}`))
		case "DELETE":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":"SANDBOX::NOT_FOUND","message":"gone"}`))
		}
	}))
	defer srv.Close()
	p, err := Start(srv.URL + "/v1")
	require.NoError(t, err)
	defer p.Close()
	base := "http://" + p.Domain() + "/v1/sandboxes"
	for _, r := range []struct{ method, url string }{{"POST", base}, {"GET", base + "/11111111-2222-3333-4444-555555555555"}, {"DELETE", base + "/11111111-2222-3333-4444-555555555555"}} {
		req, _ := http.NewRequest(r.method, r.url, nil)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
	}
	calls := p.Calls()
	require.Len(t, calls, 3)
	c := calls[0]
	assert.Equal(t, "Running", c.State)
	assert.Equal(t, "{entrypoint:[string],expiresAt:null,id:string,metadata:map,status:{reason:string,state:string}}", c.Shape)
	assert.Empty(t, c.ErrorCode)
	assert.Equal(t, []string{"Content-Type"}, c.Headers, "per-answer headers (Date, Content-Length, X-Request-Id) are left out")
	assert.False(t, c.Ended.Before(c.Time))
	assert.Equal(t, "SANDBOX::NOT_FOUND", calls[1].ErrorCode)
	assert.Equal(t, "{code:string,message:string}", calls[1].Shape)
	assert.Empty(t, calls[2].Shape, "a 204 has no body")
	assert.Empty(t, calls[2].State)
}

func TestAnswerContractNotJSON(t *testing.T) {
	state, shape, code := answerContract(502, []byte("Bad Gateway"))
	assert.Equal(t, "text", shape)
	assert.Empty(t, state+code)
	_, _, code = answerContract(200, []byte(`{"code":"OK"}`))
	assert.Empty(t, code, "a success has no error code")
}
