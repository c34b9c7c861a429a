package agent

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// execd's JSON replies are gin's c.JSON: "application/json; charset=utf-8" and
// json.Marshal's bytes, no newline after them.
func TestExecdJSONBytes(t *testing.T) {
	rr := httptest.NewRecorder()
	writeError(rr, http.StatusNotFound, "FILE_NOT_FOUND", "no <such> file")
	if rr.Code != http.StatusNotFound {
		t.Fatalf("status %d", rr.Code)
	}
	if ct := rr.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	if got, want := rr.Body.String(), `{"code":"FILE_NOT_FOUND","message":"no \u003csuch\u003e file"}`; got != want {
		t.Fatalf("body %q, want %q", got, want)
	}

	rr = httptest.NewRecorder()
	writeJSON(rr, http.StatusOK, func() {})
	if got := rr.Body.String(); rr.Code != http.StatusInternalServerError || got != `{"code":"UNKNOWN","message":"encode response"}` {
		t.Fatalf("unencodable: %d %q", rr.Code, got)
	}
}
