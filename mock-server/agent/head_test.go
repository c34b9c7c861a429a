package agent

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestHeadIsGinNotFound: real execd registers no HEAD route and leaves gin's
// HandleMethodNotAllowed off (components/execd/pkg/web/router.go), so HEAD
// on a GET route is gin's 404 "404 page not found" (text/plain), not the GET
// answer Go's mux would give. The /proxy/ reverse proxy still takes every
// method.
func TestHeadIsGinNotFound(t *testing.T) {
	_, srv, root := testAgent(t)
	if err := os.WriteFile(filepath.Join(root, "workspace", "f"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/ping", "/files/info?path=/workspace/f", "/files/download?path=/workspace/f",
		"/directories/list?path=/workspace", "/metrics", "/command/status/x", "/no/such/route"} {
		res, err := http.Head(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Type") != "text/plain" {
			t.Errorf("HEAD %s: %d %q, want 404 text/plain", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	// GET is untouched.
	res, err := http.Get(srv.URL + "/files/info?path=/workspace/f")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /files/info: %d", res.StatusCode)
	}
	// HEAD through the reverse proxy reaches the port's server.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream-Method", r.Method)
	}))
	defer up.Close()
	_, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	res, err = http.Head(srv.URL + "/proxy/" + port + "/x")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Upstream-Method") != "HEAD" {
		t.Errorf("HEAD /proxy/%s/x: %d, upstream saw %q", port, res.StatusCode, res.Header.Get("X-Upstream-Method"))
	}
}
