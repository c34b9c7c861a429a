package mockserver

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOddPathsAnswerLikeStarlette: the real server (opensandbox-server 1.1.1,
// fastapi 0.165, starlette 1.10, its ASGI app called with these raw paths,
// docker service stubbed) does no path cleaning. Each row is its answer with
// a valid key; Go's ServeMux would have redirected every dot or double-slash
// path with a 301.
func TestOddPathsAnswerLikeStarlette(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	host := strings.TrimPrefix(e.srv.URL(), "http://")
	const notFound = `{"detail":"Not Found"}`
	for _, tc := range []struct {
		method, path string
		status       int
		location     string // for 307: the path the Location names
		body         string // exact JSON, when set
	}{
		{"GET", "//v1//sandboxes", 404, "", notFound},
		{"GET", "/v1//sandboxes", 404, "", notFound},
		{"GET", "//v1/sandboxes", 404, "", notFound},
		{"GET", "/v1/sandboxes/../sandboxes", 404, "", notFound},
		{"GET", "/v1/./sandboxes", 404, "", notFound},
		{"POST", "/v1/./sandboxes", 404, "", notFound},
		{"DELETE", "/v1/sandboxes/../sandboxes", 404, "", notFound},
		{"GET", "/v1/sandboxes/%2e%2e/sandboxes", 404, "", notFound},
		// Matching is on the decoded path: %2f separates.
		{"GET", "/v1/sandboxes/" + id + "%2fpause", 405, "", `{"detail":"Method Not Allowed"}`},
		{"GET", "/v1/sandboxes/abc%2Fdef/pause", 404, "", notFound},
		{"GET", "/v1/sandboxes/" + id + "/./metadata", 404, "", notFound},
		{"GET", "/v1/sandboxes/" + id + "/../" + id, 404, "", notFound},
		{"GET", "//health", 404, "", notFound},
		{"GET", "/./health", 404, "", notFound},
		{"GET", "/nope/", 404, "", notFound},
		{"GET", "/", 404, "", notFound},
		// "." and ".." are ordinary sandbox ids: the route is found, the id is not.
		{"GET", "/v1/sandboxes/.", 404, "", ""},
		{"GET", "/v1/sandboxes/..", 404, "", ""},
		{"DELETE", "/v1/sandboxes/..", 404, "", ""},
		{"POST", "/v1/sandboxes/.", 405, "", `{"detail":"Method Not Allowed"}`},
		// redirect_slashes: 307 to the path without its trailing slashes.
		{"GET", "/v1/sandboxes/", 307, "/v1/sandboxes", ""},
		{"POST", "/v1/sandboxes//", 307, "/v1/sandboxes", ""},
		{"GET", "/sandboxes/", 307, "/sandboxes", ""},
		{"DELETE", "/v1/sandboxes/" + id + "/", 307, "/v1/sandboxes/" + id, ""},
		{"GET", "/v1/sandboxes/" + id + "/pause/", 307, "/v1/sandboxes/" + id + "/pause", ""},
		{"GET", "/v1/sandboxes/" + id + "/endpoints/8080/", 307, "/v1/sandboxes/" + id + "/endpoints/8080", ""},
		{"GET", "/health/", 307, "/health", ""},
		{"POST", "/v1/metrics/events/", 307, "/v1/metrics/events", ""},
		// The metrics router is included under /v1 only.
		{"POST", "/v1/metrics/events", 204, "", ""},
		{"POST", "/metrics/events", 404, "", notFound},
		{"GET", "/metrics/events", 404, "", notFound},
		{"POST", "/metrics/events/", 404, "", notFound},
		{"GET", "/v1/metrics/events", 405, "", `{"detail":"Method Not Allowed"}`},
		// Clean paths still work.
		{"GET", "/v1/sandboxes/" + id, 200, "", ""},
		{"GET", "/sandboxes", 200, "", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var body io.Reader
			if tc.method == "POST" {
				body = strings.NewReader("{}")
			}
			req, err := http.NewRequest(tc.method, e.srv.URL()+tc.path, body)
			require.NoError(t, err)
			req.Header.Set(headerAPIKey, testKey)
			res, err := client.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			assert.Equal(t, tc.status, res.StatusCode, "%s", b)
			if tc.location != "" {
				assert.Equal(t, "http://"+host+tc.location, res.Header.Get("Location"))
				assert.Empty(t, b)
			} else {
				assert.Empty(t, res.Header.Get("Location"))
			}
			if tc.body != "" {
				assert.JSONEq(t, tc.body, string(b))
			}
		})
	}
	// Authentication still comes first, and /health stays exempt.
	for path, want := range map[string]int{"//v1//sandboxes": 401, "/v1/sandboxes/": 401, "/health/": 307} {
		req, err := http.NewRequest("GET", e.srv.URL()+path, nil)
		require.NoError(t, err)
		res, err := client.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, want, res.StatusCode, path)
	}
}
