package mockserver

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// proxyTailRe finds the catch-all tail of the server proxy route, whose
// {path:path} takes any characters, empty and dot segments included.
var proxyTailRe = regexp.MustCompile(`^(?:/v1)?/sandboxes/[^/]+/proxy/[^/]+/`)

// starletteRouting serves mux with Starlette's path semantics instead of Go's.
// Go's ServeMux cleans paths and redirects (301) "//v1//sandboxes",
// "/v1/./sandboxes" or "/v1/sandboxes/../sandboxes"; Starlette matches the
// raw (percent-decoded) path segment by segment: "." and ".." are ordinary
// values of a path parameter, an empty segment fits no parameter, and a path
// no route fits is 404 {"detail":"Not Found"}, except that redirect_slashes
// answers 307 to the path with its trailing slashes stripped (or one added)
// when that path fits a route of any method (checked against the real
// server 1.1.1 app).
func starletteRouting(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path // Starlette matches the percent-decoded path
		if r2, ok := resolveRaw(mux, r, p); ok {
			mux.ServeHTTP(w, r2)
			return
		}
		if p != "/" {
			alt := p + "/"
			if strings.HasSuffix(p, "/") {
				alt = strings.TrimRight(p, "/")
			}
			if _, ok := resolveRaw(mux, r, alt); ok && alt != "" {
				loc := "http://" + r.Host + (&url.URL{Path: alt}).EscapedPath()
				if r.URL.RawQuery != "" {
					loc += "?" + r.URL.RawQuery
				}
				w.Header().Set("Location", loc)
				w.WriteHeader(http.StatusTemporaryRedirect)
				return
			}
		}
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
}

// resolveRaw reports whether the decoded path p fits a route of mux (of any
// method: Starlette's partial match), returning the request rewritten so the
// mux sees p without dot or empty segments: those are percent-encoded, which
// the mux neither cleans nor treats as separators (path values come back
// decoded).
func resolveRaw(mux *http.ServeMux, r *http.Request, p string) (*http.Request, bool) {
	tailAt := -1
	if loc := proxyTailRe.FindStringIndex(p); loc != nil {
		tailAt = loc[1] // the proxy's catch-all tail: its separators can stay encoded
	}
	return wire.RouteRaw(mux, r, p, tailAt)
}
