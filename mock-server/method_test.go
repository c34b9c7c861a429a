package mockserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHeadAndOtherMethodsAre405: FastAPI's APIRoute takes exactly the
// methods it was declared with (no HEAD for a GET route, unlike Go's mux
// and Starlette's plain Route), and Starlette answers a path whose routes do
// not take the method with 405, Allow naming the methods of the path's first
// route and FastAPI's {"detail":"Method Not Allowed"}. Observed with the
// fastapi 0.165 / starlette 1.10 that opensandbox-server 1.1.1 installs,
// routes declared in the real server's order: HEAD /sandboxes → Allow: POST
// (create is declared before list), HEAD /sandboxes/{id} → Allow: GET.
// Authentication still comes first.
func TestHeadAndOtherMethodsAre405(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	for _, tc := range []struct {
		method, path, allow string
	}{
		{"HEAD", "/v1/sandboxes", "POST"},
		{"HEAD", "/sandboxes", "POST"},
		{"HEAD", "/v1/sandboxes/" + id, "GET"},
		{"HEAD", "/v1/sandboxes/nope", "GET"},
		{"HEAD", "/v1/sandboxes/" + id + "/endpoints/8080", "GET"},
		{"HEAD", "/v1/sandboxes/" + id + "/endpoints/abc", "GET"}, // routing before path validation
		{"HEAD", "/v1/sandboxes/" + id + "/diagnostics/logs", "GET"},
		{"HEAD", "/v1/snapshots", "GET"},
		{"HEAD", "/health", "GET"},
		{"PUT", "/v1/sandboxes", "POST"},
		{"POST", "/v1/sandboxes/" + id, "GET"},
		{"GET", "/v1/sandboxes/" + id + "/renew-expiration", "POST"},
		{"HEAD", "/v1/sandboxes/" + id + "/metadata", "PATCH"},
		{"HEAD", "/v1/sandboxes/" + id + "/proxy/abc/x", "GET, POST, PUT, DELETE, PATCH"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.call(tc.method, tc.path, nil, nil)
			assert.Equal(t, http.StatusMethodNotAllowed, r.Status, "%s", r.Body)
			assert.Equal(t, tc.allow, r.Header.Get("Allow"))
			assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			if tc.method == "HEAD" {
				assert.Empty(t, r.Body)
			} else {
				assert.JSONEq(t, `{"detail":"Method Not Allowed"}`, string(r.Body))
			}
		})
	}
	// GET itself is untouched; HEAD without a key is refused before routing.
	assert.Equal(t, http.StatusOK, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status)
	assert.Equal(t, http.StatusOK, e.call("GET", "/health", nil, nil).Status)
	r := e.call("HEAD", "/v1/sandboxes/"+id, nil, map[string]string{headerAPIKey: ""})
	assert.Equal(t, http.StatusUnauthorized, r.Status)
	// An unknown path stays 404 for HEAD too.
	assert.Equal(t, http.StatusNotFound, e.call("HEAD", "/v1/no/such/route", nil, nil).Status)
}
