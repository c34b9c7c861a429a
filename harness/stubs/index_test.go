package stubs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

type anchor struct{ href, text string }

// parseAnchors parses an HTML page and returns its <a> elements.
func parseAnchors(t *testing.T, body string) (title string, out []anchor) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	require.NoError(t, err)
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "title" && n.FirstChild != nil {
			title = n.FirstChild.Data
		}
		if n.Type == html.ElementNode && n.Data == "a" {
			a := anchor{}
			for _, at := range n.Attr {
				if at.Key == "href" {
					a.href = at.Val
				}
			}
			if n.FirstChild != nil {
				a.text = n.FirstChild.Data
			}
			out = append(out, a)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return title, out
}

func fakeWheels(t *testing.T) (dir string, sums map[string]string) {
	t.Helper()
	dir = t.TempDir()
	sums = map[string]string{}
	for name, content := range map[string]string{
		"tabulate-0.9.0-py3-none-any.whl": "PK fake wheel bytes",
		"Foo.Bar-1.0.tar.gz":              "fake sdist",
		"foo_bar-1.1-py3-none-any.whl":    "another fake",
		"README.txt":                      "not a distribution",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
		s := sha256.Sum256([]byte(content))
		sums[name] = hex.EncodeToString(s[:])
	}
	return dir, sums
}

// noRedirect is a client that never follows redirects and never dials
// anything but addr (it stands in for the egress gateway's mapping).
func client(addr string) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", addr)
			},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func get(t *testing.T, c *http.Client, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestIndexPEP503Structure(t *testing.T) {
	dir, sums := fakeWheels(t)
	idx, err := NewPackageIndex(dir)
	require.NoError(t, err)
	defer idx.Close()
	ok, reason := idx.Available()
	assert.True(t, ok, reason)
	assert.True(t, idx.Has("Tabulate"))
	assert.True(t, idx.Has("foo_bar"))
	c := client(idx.Addr())

	resp, body := get(t, c, idx.SimpleURL(), nil)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	_, anchors := parseAnchors(t, body)
	assert.Equal(t, []anchor{{"/simple/foo-bar/", "foo-bar"}, {"/simple/tabulate/", "tabulate"}}, anchors)
	assert.Contains(t, body, `<meta name="pypi:repository-version" content="1.0">`)

	// Direct loopback access: links stay on this server.
	resp, body = get(t, c, idx.URL()+"/simple/tabulate/", nil)
	assert.Equal(t, 200, resp.StatusCode)
	title, anchors := parseAnchors(t, body)
	assert.Equal(t, "Links for tabulate", title)
	require.Len(t, anchors, 1)
	assert.Equal(t, "/packages/tabulate-0.9.0-py3-none-any.whl#sha256="+sums["tabulate-0.9.0-py3-none-any.whl"], anchors[0].href)
	assert.Equal(t, "tabulate-0.9.0-py3-none-any.whl", anchors[0].text)

	_, body = get(t, c, idx.URL()+"/simple/foo-bar/", nil)
	_, anchors = parseAnchors(t, body)
	require.Len(t, anchors, 2, "sdist and wheel of one normalised project")

	// The served file hashes to the advertised sha256.
	resp, body = get(t, c, idx.URL()+"/packages/tabulate-0.9.0-py3-none-any.whl", nil)
	assert.Equal(t, 200, resp.StatusCode)
	s := sha256.Sum256([]byte(body))
	assert.Equal(t, sums["tabulate-0.9.0-py3-none-any.whl"], hex.EncodeToString(s[:]))
}

// Through the egress gateway, requests arrive as plain HTTP with the
// original Host header: links then point at files.pythonhosted.org, which
// the gateway maps back to this stub.
func TestIndexBehindGatewayUsesFilesHost(t *testing.T) {
	dir, sums := fakeWheels(t)
	idx, err := NewPackageIndex(dir)
	require.NoError(t, err)
	defer idx.Close()
	gw := client(idx.Addr()) // every hostname → the stub, as Upstreams() says

	_, body := get(t, gw, "http://pypi.org/simple/tabulate/", nil)
	_, anchors := parseAnchors(t, body)
	require.Len(t, anchors, 1)
	want := "https://files.pythonhosted.org/packages/tabulate-0.9.0-py3-none-any.whl#sha256=" + sums["tabulate-0.9.0-py3-none-any.whl"]
	assert.Equal(t, want, anchors[0].href)

	_, body = get(t, gw, "http://pypi.org/simple/tabulate/", map[string]string{"X-Forwarded-Proto": "http"})
	_, anchors = parseAnchors(t, body)
	assert.True(t, strings.HasPrefix(anchors[0].href, "http://files.pythonhosted.org/packages/"))

	resp, file := get(t, gw, "http://files.pythonhosted.org/packages/tabulate-0.9.0-py3-none-any.whl", nil)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "PK fake wheel bytes", file)

	hosts := map[string]bool{}
	for _, r := range idx.Requests() {
		hosts[r.Host] = true
	}
	assert.True(t, hosts["pypi.org"])
	assert.True(t, hosts["files.pythonhosted.org"])
}

func TestIndexRedirectsAndErrors(t *testing.T) {
	dir, _ := fakeWheels(t)
	idx, err := NewPackageIndex(dir)
	require.NoError(t, err)
	defer idx.Close()
	c := client(idx.Addr())
	for path, loc := range map[string]string{
		"/simple":           "/simple/",
		"/simple/Tabulate/": "/simple/tabulate/",
		"/simple/tabulate":  "/simple/tabulate/",
		"/simple/Foo.Bar":   "/simple/foo-bar/",
	} {
		resp, _ := get(t, c, idx.URL()+path, nil)
		assert.Equal(t, http.StatusMovedPermanently, resp.StatusCode, path)
		assert.Equal(t, loc, resp.Header.Get("Location"), path)
	}
	for _, path := range []string{"/simple/does-not-exist/", "/packages/README.txt", "/packages/../../etc/passwd",
		"/packages/nope.whl", "/other"} {
		if strings.Contains(path, "..") {
			resp, body := get(t, c, idx.URL()+path, nil)
			assert.NotEqual(t, http.StatusOK, resp.StatusCode, path)
			assert.NotContains(t, body, "root:", path)
			continue
		}
		resp, _ := get(t, c, idx.URL()+path, nil)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
	req, _ := http.NewRequest(http.MethodPost, idx.URL()+"/simple/", nil)
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestIndexEmptyDirStillValid(t *testing.T) {
	for name, dir := range map[string]string{"empty": t.TempDir(), "missing": filepath.Join(t.TempDir(), "nope")} {
		idx, err := NewPackageIndex(dir)
		require.NoError(t, err, name)
		ok, reason := idx.Available()
		assert.False(t, ok, name)
		assert.Contains(t, reason, dir, name)
		assert.Contains(t, reason, "make deps", name)
		resp, body := get(t, client(idx.Addr()), idx.SimpleURL(), nil)
		assert.Equal(t, 200, resp.StatusCode, name)
		_, anchors := parseAnchors(t, body)
		assert.Empty(t, anchors, name)
		resp, _ = get(t, client(idx.Addr()), idx.URL()+"/simple/tabulate/", nil)
		assert.Equal(t, 404, resp.StatusCode, name)
		require.NoError(t, idx.Close())
	}
}

func TestParseDistName(t *testing.T) {
	for file, want := range map[string][2]string{
		"tabulate-0.9.0-py3-none-any.whl":                  {"tabulate", "0.9.0"},
		"Foo.Bar-1.0.tar.gz":                               {"foo-bar", "1.0"},
		"zope.interface-6.0-cp311-cp311-manylinux_x.whl":   {"zope-interface", "6.0"},
		"python_dateutil-2.9.0.post0-py2.py3-none-any.whl": {"python-dateutil", "2.9.0.post0"},
	} {
		p, v, ok := parseDistName(file)
		assert.True(t, ok, file)
		assert.Equal(t, want, [2]string{p, v}, file)
	}
	_, _, ok := parseDistName("notes.txt")
	assert.False(t, ok)
}
