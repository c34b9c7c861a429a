package confine

import (
	"net/http"
	"net/url"
	"strings"
)

// SandboxRoute is the sandbox a request path is scoped to: the id after
// "sandboxes" in /sandboxes/{id}/… or /v1/sandboxes/{id}/… (every route of
// one sandbox: get, delete, metadata, pause, resume, renew, endpoints,
// diagnostics, snapshots and the server proxy /…/proxy/{port}/…). ok is
// false for a path no sandbox is named in (create, list, /health…).
//
// It reads the path as conservatively as any server might: empty and "."
// segments are skipped, "sandboxes" matches in any letter case and with a
// "v1" (any case) or any one other segment before it, and a path that still
// holds percent-escapes after the one decoding is decoded again (a server
// that decodes twice must not route where the guard did not look).
func SandboxRoute(path string) (id string, ok bool) {
	for i := 0; i < 3; i++ {
		if id, ok = sandboxRoute(path); ok {
			return id, true
		}
		u, err := url.PathUnescape(path)
		if err != nil || u == path {
			return "", false
		}
		path = u
	}
	return "", false
}

func sandboxRoute(path string) (string, bool) {
	var segs []string
	for _, s := range strings.Split(path, "/") {
		if s == "" || s == "." {
			continue
		}
		segs = append(segs, s)
		if len(segs) == 3 {
			break
		}
	}
	for i := 0; i < 2 && i+1 < len(segs); i++ {
		if strings.EqualFold(segs[i], "sandboxes") {
			return segs[i+1], true
		}
	}
	return "", false
}

// requestSandbox is the sandbox r is scoped to: its decoded path, then its
// raw request line (either may name it).
func requestSandbox(r *http.Request) (string, bool) {
	if r.URL != nil {
		if id, ok := SandboxRoute(r.URL.Path); ok {
			return id, true
		}
	}
	raw := r.RequestURI
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if u, err := url.Parse(raw); err == nil && u.Host != "" { // absolute form
		raw = u.EscapedPath()
	}
	return SandboxRoute(raw)
}
