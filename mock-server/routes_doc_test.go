package mockserver

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// documentedRoutes reads a route list: every "METHOD /_mock/path" that re
// finds (its first group the method, its second the path, which a body
// example, "[?query]" or "?query" may follow). The set, as "METHOD path".
func documentedRoutes(t *testing.T, file string, re *regexp.Regexp) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		path, _, _ := strings.Cut(m[2], "[")
		path, _, _ = strings.Cut(path, "?")
		out[m[1]+" "+path] = true
	}
	return out
}

// TestAdminRoutesAreDocumented: the admin routes the server registers
// (adminRoutes, recorded as they are registered) are exactly the routes of
// doc.go's admin list and README.md's, so a new fault route cannot go
// unlisted and a removed one cannot stay listed.
func TestAdminRoutesAreDocumented(t *testing.T) {
	mux := &patternMux{ServeMux: http.NewServeMux()}
	(&Server{}).adminRoutes(mux)
	served := map[string]bool{}
	for _, p := range mux.patterns {
		method, path, ok := strings.Cut(p, " ")
		if !ok || !strings.HasPrefix(path, "/_mock/") {
			t.Errorf("admin route %q has no method or is not under /_mock/: every admin route is METHOD /_mock/…", p)
			continue
		}
		served[method+" "+path] = true
	}
	if len(served) < 10 {
		t.Fatalf("only %d admin routes recorded (%v): adminRoutes no longer registers through its patternMux?", len(served), mux.patterns)
	}
	lists := map[string]map[string]bool{
		// doc.go: the tab-indented lines of the "Admin API" section.
		"doc.go": documentedRoutes(t, "doc.go", regexp.MustCompile(`(?m)^//\t(GET|POST|PUT|PATCH|DELETE) +(/_mock/\S+)`)),
		// README.md: every backquoted "METHOD /_mock/…".
		"README.md": documentedRoutes(t, "README.md", regexp.MustCompile("`(GET|POST|PUT|PATCH|DELETE) +(/_mock/[^`\\s]+)")),
	}
	for file, listed := range lists {
		for r := range served {
			if !listed[r] {
				t.Errorf("%s does not list the admin route %s (registered in admin.go adminRoutes)", file, r)
			}
		}
		var gone []string
		for r := range listed {
			if !served[r] {
				gone = append(gone, r)
			}
		}
		slices.Sort(gone)
		for _, r := range gone {
			t.Errorf("%s lists %s, which the server does not register (adminRoutes in admin.go)", file, r)
		}
	}
}
