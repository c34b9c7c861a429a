package wire

import (
	"net/http"
	"net/url"
	"strings"
)

// RouteRaw reports whether the decoded path p fits a route of mux, returning
// the request rewritten so the mux sees p with its dot segments
// percent-encoded: Go's mux then neither cleans nor redirects them, as the
// real server (Starlette) and execd (gin) do not, and path values come back
// decoded. An empty segment other than a trailing one fits no parameter. From
// byte tailAt on (when ≥ 0) p is one catch-all value (a proxy route's rest),
// kept whole. A match of the mux's "/" fallback is no match.
func RouteRaw(mux *http.ServeMux, r *http.Request, p string, tailAt int) (*http.Request, bool) {
	if p == "" || p[0] != '/' {
		return nil, false
	}
	head, tail := p, ""
	if tailAt >= 0 && tailAt <= len(p) {
		head, tail = p[:tailAt], url.PathEscape(p[tailAt:])
		if strings.HasPrefix(tail, ".") {
			tail = "%2E" + tail[1:]
		}
	}
	segs := strings.Split(head[1:], "/")
	for i, s := range segs {
		switch s {
		case ".":
			segs[i] = "%2E"
		case "..":
			segs[i] = "%2E%2E"
		case "":
			if i != len(segs)-1 {
				return nil, false
			}
		default:
			segs[i] = url.PathEscape(s)
		}
	}
	enc := "/" + strings.Join(segs, "/") + tail
	u := *r.URL
	u.Path, u.RawPath = p, enc
	r2 := new(http.Request)
	*r2 = *r
	r2.URL = &u
	if _, pat := mux.Handler(r2); pat == "/" || pat == "" || u.EscapedPath() != enc {
		return nil, false
	}
	return r2, true
}
