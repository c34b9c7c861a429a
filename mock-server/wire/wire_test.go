package wire

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The package is neutral ground: the harness and the server both import it, so
// it must import neither (nor anything outside the standard library).
func TestImportsOnlyStdlib(t *testing.T) {
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	fset := token.NewFileSet()
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(p, "/")
			assert.NotContains(t, first, ".", "%s imports %s: wire may import only the standard library", e.Name(), p)
		}
		n++
	}
	assert.Greater(t, n, 0)
}

func TestLifecycleBodyRawOrBase64(t *testing.T) {
	var raw, b64 Lifecycle
	require.NoError(t, json.Unmarshal([]byte(`{"method":"POST","body":{"a":1}}`), &raw))
	require.NoError(t, json.Unmarshal([]byte(`{"method":"POST","body":"eyJhIjoxfQ=="}`), &b64))
	assert.JSONEq(t, `{"a":1}`, string(raw.Body))
	assert.JSONEq(t, `{"a":1}`, string(b64.Body))
	assert.Equal(t, "POST", b64.Method)
	// A JSON string that is not base64 of JSON stays the string it was.
	var s Lifecycle
	require.NoError(t, json.Unmarshal([]byte(`{"body":"not base64"}`), &s))
	assert.Equal(t, `"not base64"`, string(s.Body))
	// On the wire Body is always raw JSON.
	out, err := json.Marshal(b64)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"body":{"a":1}`)
	assert.Error(t, json.Unmarshal([]byte(`{"status":"x"}`), &s))
}

func TestRedactBody(t *testing.T) {
	got := RedactBody([]byte(`{"env":{"K":"secret","N":7,"Z":null},"image":{"uri":"python:3.12","auth":{"password":"p"}},"timeout":1200.0}`))
	assert.JSONEq(t, `{"env":{"K":"sha256:`+Fingerprint("secret")+`","N":"sha256:`+Fingerprint("7")+`","Z":null},`+
		`"image":{"uri":"python:3.12","auth":"redacted"},"timeout":1200.0}`, string(got))
	assert.NotContains(t, string(got), "secret")
	assert.Contains(t, string(got), `1200.0`, "numbers are kept as sent")
	bad := RedactBody([]byte(`TOKEN=secret`))
	assert.JSONEq(t, `{"_unparsed_bytes":12,"_sha256":"`+Fingerprint("TOKEN=secret")+`"}`, string(bad))
	assert.Equal(t, "2bb80d537b1d", Fingerprint("secret"))
}

func TestWriteJSON(t *testing.T) {
	rr := httptest.NewRecorder()
	WriteJSON(rr, http.StatusNotFound, map[string]string{"code": "X", "message": "m"})
	assert.Equal(t, 404, rr.Code)
	assert.Equal(t, "application/json", rr.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"code":"X","message":"m"}`, rr.Body.String())

	rr = httptest.NewRecorder()
	WriteJSON(rr, http.StatusOK, json.RawMessage(`{"ok":true}`))
	assert.Equal(t, `{"ok":true}`, rr.Body.String())

	rr = httptest.NewRecorder()
	WriteJSON(rr, http.StatusOK, func() {})
	assert.Equal(t, 500, rr.Code)
	assert.JSONEq(t, encodeFailed, rr.Body.String())
}

// The exact bytes of each style: the zero JSONReply is WriteJSON's; the
// options change the Content-Type, end the body with one newline (as
// json.Encoder does) and replace the encode-failed body.
func TestJSONReplyBytes(t *testing.T) {
	v := map[string]string{"a": "<b>"}
	rr := httptest.NewRecorder()
	JSONReply{}.Write(rr, http.StatusCreated, v)
	assert.Equal(t, 201, rr.Code)
	assert.Equal(t, "application/json", rr.Header().Get("Content-Type"))
	assert.Equal(t, `{"a":"\u003cb\u003e"}`, rr.Body.String(), "json.Marshal's bytes, no newline")

	rr = httptest.NewRecorder()
	JSONReply{Newline: true}.Write(rr, http.StatusOK, v)
	var enc strings.Builder
	require.NoError(t, json.NewEncoder(&enc).Encode(v))
	assert.Equal(t, enc.String(), rr.Body.String(), "as json.Encoder writes it")
	assert.Equal(t, "{\"a\":\"\\u003cb\\u003e\"}\n", rr.Body.String())

	rr = httptest.NewRecorder()
	JSONReply{ContentType: "application/json; charset=utf-8"}.Write(rr, http.StatusOK, json.RawMessage(`{ "ok" : true }`))
	assert.Equal(t, "application/json; charset=utf-8", rr.Header().Get("Content-Type"))
	assert.Equal(t, `{"ok":true}`, rr.Body.String())

	rr = httptest.NewRecorder()
	JSONReply{EncodeFailed: `{"code":"X"}`, Newline: true}.Write(rr, http.StatusOK, func() {})
	assert.Equal(t, 500, rr.Code)
	assert.Equal(t, "{\"code\":\"X\"}\n", rr.Body.String())
}

func TestStatusRecorder(t *testing.T) {
	rr := httptest.NewRecorder()
	rec := &StatusRecorder{ResponseWriter: rr}
	assert.Equal(t, 200, rec.Code(), "nothing written reads as 200")
	_, _ = rec.Write([]byte("abc"))
	rec.WriteHeader(500) // too late: the first status stands
	_, _ = rec.Write([]byte("de"))
	rec.Flush()
	assert.Equal(t, 200, rec.Status)
	assert.Equal(t, int64(5), rec.Bytes)
	assert.True(t, rr.Flushed)
	assert.Same(t, http.ResponseWriter(rr), rec.Unwrap())

	rec = &StatusRecorder{ResponseWriter: httptest.NewRecorder()}
	rec.WriteHeader(204)
	assert.Equal(t, 204, rec.Code())

	// an interim 100 Continue (an upload with "Expect: 100-continue") is not
	// the exchange's status; a 101 is
	rec = &StatusRecorder{ResponseWriter: httptest.NewRecorder()}
	rec.WriteHeader(http.StatusContinue)
	rec.WriteHeader(http.StatusCreated)
	assert.Equal(t, 201, rec.Code())
	rec = &StatusRecorder{ResponseWriter: httptest.NewRecorder()}
	rec.WriteHeader(http.StatusSwitchingProtocols)
	assert.Equal(t, 101, rec.Code())
}

func TestWriteError(t *testing.T) {
	rr := httptest.NewRecorder()
	WriteError(rr, http.StatusBadRequest, "SANDBOX::INVALID_PARAMETER", "bad")
	assert.Equal(t, 400, rr.Code)
	assert.Equal(t, `{"code":"SANDBOX::INVALID_PARAMETER","message":"bad"}`, rr.Body.String())
	var e Error
	require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &e))
	assert.Equal(t, Error{Code: "SANDBOX::INVALID_PARAMETER", Message: "bad"}, e)
}
