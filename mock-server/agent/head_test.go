package agent

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestUnknownRouteIsGinNotFound: real execd (gin, HandleMethodNotAllowed
// off) answers an unknown route, and a method its path's routes do not take,
// with gin's 404 "404 page not found" (text/plain), not an execd JSON error
// and not 405. The routes the agent deliberately answers 501 for (code
// contexts, pty) keep their JSON 501.
func TestUnknownRouteIsGinNotFound(t *testing.T) {
	_, srv, _ := testAgent(t)
	call := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		res, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
		return res, string(b)
	}
	for _, c := range [][2]string{
		{"GET", "/no/such/route"}, {"POST", "/no/such/route"}, {"DELETE", "/"},
		{"GET", "/command"}, {"PUT", "/command"}, {"POST", "/ping"}, {"PATCH", "/files"},
		{"GET", "/files/upload"}, {"POST", "/files/download?path=/workspace/f"}, {"PUT", "/directories"},
		{"GET", "/session"}, {"GET", "/command/x/y"}, {"POST", "/command/status/x"}, {"POST", "/metrics"},
	} {
		res, body := call(c[0], c[1])
		if res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Type") != "text/plain" || body != "404 page not found" {
			t.Errorf("%s %s: %d %q %q, want 404 text/plain %q", c[0], c[1], res.StatusCode,
				res.Header.Get("Content-Type"), body, "404 page not found")
		}
		if res.Header.Get("Allow") != "" {
			t.Errorf("%s %s: Allow %q, want none (no 405 handling)", c[0], c[1], res.Header.Get("Allow"))
		}
	}
	for _, c := range [][2]string{{"GET", "/pty"}, {"POST", "/pty/x"}} {
		res, body := call(c[0], c[1])
		if res.StatusCode != http.StatusNotImplemented || !strings.Contains(body, `"NOT_SUPPORTED"`) {
			t.Errorf("%s %s: %d %q, want the JSON 501", c[0], c[1], res.StatusCode, body)
		}
	}
}
