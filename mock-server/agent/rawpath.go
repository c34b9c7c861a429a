package agent

import (
	"net/http"
	"net/url"
	"strings"
)

// ginRouting serves mux with the path semantics of the real execd's gin
// engine (gin v1.10.0, gin.New(): RedirectTrailingSlash on, RedirectFixedPath,
// RemoveExtraSlash and UseRawPath off) instead of Go's ServeMux, which cleans
// paths and redirects "//ping", "/files/../ping" or
// "/command/status/..%2f.." with a 301. gin matches the percent-decoded path
// as is: "." and ".." are ordinary parameter values, a path that fits no
// route of the method is 404, and one trailing slash too many or too few
// (never more) next to a route of the same method is redirected with
// http.Redirect: 301 for GET, 307 otherwise.
func ginRouting(mux *http.ServeMux, noRoute http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if r2, ok := resolveGin(mux, r, p); ok {
			mux.ServeHTTP(w, r2)
			return
		}
		if p != "/" && strings.HasSuffix(p, "/") && !strings.HasSuffix(p, "//") {
			alt := p[:len(p)-1]
			if _, ok := resolveGin(mux, r, alt); ok {
				code := http.StatusMovedPermanently
				if r.Method != http.MethodGet {
					code = http.StatusTemporaryRedirect
				}
				u := url.URL{Path: alt, RawQuery: r.URL.RawQuery}
				http.Redirect(w, r, u.String(), code)
				return
			}
		}
		noRoute(w, r)
	})
}

// resolveGin reports whether the decoded path p fits a route of mux for the
// request's method, returning the request rewritten so the mux sees p with
// its dot segments percent-encoded (the mux then neither cleans nor
// redirects; path values come back decoded). Below /proxy/{port}/ the rest
// is one value, forwarded as is.
func resolveGin(mux *http.ServeMux, r *http.Request, p string) (*http.Request, bool) {
	if p == "" || p[0] != '/' {
		return nil, false
	}
	head, tail := p, ""
	if strings.HasPrefix(p, "/proxy/") {
		if i := strings.IndexByte(p[len("/proxy/"):], '/'); i >= 0 {
			head, tail = p[:len("/proxy/")+i+1], p[len("/proxy/")+i+1:]
			tail = url.PathEscape(tail)
			if strings.HasPrefix(tail, ".") {
				tail = "%2E" + tail[1:]
			}
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
