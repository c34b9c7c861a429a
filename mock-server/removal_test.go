package mockserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A lifecycle call of a sandbox removed while it ran answers 404 as for an
// unknown sandbox, whatever it made of the half-removed sandbox; a 422 stays
// (validation comes first), and a call that started work of its own (a
// snapshot) keeps its 2xx.
func TestAnswersGoneWhenRemovedMidCall(t *testing.T) {
	env := newEnv(t)
	cases := []struct {
		name    string
		keep2xx bool
		status  int
		want    int
	}{
		{"a 500 of the half-removed sandbox", false, http.StatusInternalServerError, http.StatusNotFound},
		{"a 409 from its dead state", false, http.StatusConflict, http.StatusNotFound},
		{"a 200 showing a dead container", false, http.StatusOK, http.StatusNotFound},
		{"a 422 of the request itself", false, http.StatusUnprocessableEntity, http.StatusUnprocessableEntity},
		{"a snapshot accepted before the removal", true, http.StatusAccepted, http.StatusAccepted},
		{"a snapshot refused for the dead state", true, http.StatusConflict, http.StatusNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := env.create(nil)
			h := func(w http.ResponseWriter, r *http.Request) {
				require.NoError(t, env.srv.remove(id, "Deleted", "deleted by API", false)) // the removal, mid-call
				w.Header().Set("Content-Length", "2")
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte("{}"))
			}
			req := httptest.NewRequest(http.MethodGet, "/v1/sandboxes/"+id, nil)
			req.SetPathValue("id", id)
			rec := httptest.NewRecorder()
			env.srv.answersGoneIf(h, c.keep2xx)(rec, req)
			assert.Equal(t, c.want, rec.Code)
			if c.want == http.StatusNotFound {
				assert.JSONEq(t, `{"code":"DOCKER::SANDBOX_NOT_FOUND","message":"Sandbox `+id+` not found."}`, rec.Body.String())
			}
		})
	}
	// Not removed: the handler's answer, headers included.
	id := env.create(nil)
	req := httptest.NewRequest(http.MethodGet, "/v1/sandboxes/"+id, nil)
	req.SetPathValue("id", id)
	rec := httptest.NewRecorder()
	env.srv.answersGone(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Kept", "1")
		w.WriteHeader(http.StatusTeapot)
	})(rec, req)
	assert.Equal(t, http.StatusTeapot, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("X-Kept"))
}
