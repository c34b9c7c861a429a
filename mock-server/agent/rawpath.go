package agent

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/wire"
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
	tailAt := -1
	if strings.HasPrefix(p, "/proxy/") {
		if i := strings.IndexByte(p[len("/proxy/"):], '/'); i >= 0 {
			tailAt = len("/proxy/") + i + 1
		}
	}
	return wire.RouteRaw(mux, r, p, tailAt)
}
