package mockserver

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

var updateRouteDocs = flag.Bool("update", false, "rewrite doc.go's and README.md's admin route lists from adminRoutes")

// registeredRoutes are the admin routes adminRoutes registers, in order.
func registeredRoutes(t *testing.T) []adminRoute {
	t.Helper()
	mux := &routeMux{ServeMux: http.NewServeMux()}
	(&Server{}).adminRoutes(mux)
	if len(mux.routes) < 10 {
		t.Fatalf("only %d admin routes recorded: adminRoutes no longer registers through its routeMux?", len(mux.routes))
	}
	for _, r := range mux.routes {
		method, path, ok := strings.Cut(r.Pattern, " ")
		if !ok || method == "" || !strings.HasPrefix(path, "/_mock/") {
			t.Errorf("admin route %q has no method or is not under /_mock/: every admin route is METHOD /_mock/…", r.Pattern)
		}
		if strings.TrimSpace(r.Usage) == "" {
			t.Errorf("admin route %s has no usage line (its body or query, its answer)", r.Pattern)
		}
	}
	return mux.routes
}

// splitUsage cuts a usage line into its request part (query or body;
// empty for none) and its answer.
func splitUsage(usage string) (request, answer string) {
	request, answer, ok := strings.Cut(usage, "  ")
	if !ok {
		return "", strings.TrimSpace(usage)
	}
	return request, strings.TrimSpace(answer)
}

// docGoRouteList is doc.go's list: one tab-indented line per route
// (METHOD padded, path, request, answer), wrapped at spaces near 118
// columns.
func docGoRouteList(routes []adminRoute) string {
	var b strings.Builder
	for _, r := range routes {
		method, path, _ := strings.Cut(r.Pattern, " ")
		req, answer := splitUsage(r.Usage)
		if req != "" && !strings.HasPrefix(req, "[") && !strings.HasPrefix(req, "?") {
			req = " " + req
		}
		words := strings.Fields(answer)
		line := fmt.Sprintf("//\t%-6s %s%s ", method, path, req)
		for _, w := range words {
			if utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > 118 && strings.TrimSpace(line) != "//" {
				b.WriteString(strings.TrimRight(line, " ") + "\n")
				line = "//\t      "
			}
			line += " " + w
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	return b.String()
}

// readmeRouteList is README.md's list: one bullet per route.
func readmeRouteList(routes []adminRoute) string {
	var b strings.Builder
	for _, r := range routes {
		method, path, _ := strings.Cut(r.Pattern, " ")
		req, answer := splitUsage(r.Usage)
		body := ""
		switch {
		case strings.HasPrefix(req, "[") || strings.HasPrefix(req, "?"):
			path += req
		case req != "":
			body = " `" + req + "`"
		}
		fmt.Fprintf(&b, "  - `%s %s`%s → %s\n", method, path, body, answer)
	}
	return b.String()
}

const (
	readmeRoutesBegin = "<!-- the admin routes: generated from adminRoutes (admin.go) by go test ./mock-server -run TestAdminRoutesAreDocumented -update -->\n"
	readmeRoutesEnd   = "<!-- end of the admin routes -->\n"
)

// replaceDocGoList puts list in place of doc.go's route list: the
// tab-indented lines that follow the "# Admin API" heading.
func replaceDocGoList(doc, list string) (string, error) {
	h := strings.Index(doc, "// # Admin API")
	if h < 0 {
		return "", fmt.Errorf("doc.go has no \"# Admin API\" section")
	}
	start := strings.Index(doc[h:], "\n//\t")
	if start < 0 {
		return "", fmt.Errorf("doc.go's Admin API section has no route list (tab-indented lines)")
	}
	start += h + 1
	end := start
	for strings.HasPrefix(doc[end:], "//\t") {
		end += strings.Index(doc[end:], "\n") + 1
	}
	return doc[:start] + list + doc[end:], nil
}

// replaceReadmeList puts list between README.md's markers.
func replaceReadmeList(readme, list string) (string, error) {
	a := strings.Index(readme, readmeRoutesBegin)
	b := strings.Index(readme, readmeRoutesEnd)
	if a < 0 || b < a {
		return "", fmt.Errorf("README.md has no %q … %q markers", strings.TrimSpace(readmeRoutesBegin), strings.TrimSpace(readmeRoutesEnd))
	}
	return readme[:a+len(readmeRoutesBegin)] + list + readme[b:], nil
}

// TestAdminRoutesAreDocumented: doc.go's and README.md's admin route lists
// are generated from the routes the server registers (adminRoutes, each
// with its usage line), so a new fault route cannot go unlisted and a
// removed one cannot stay listed. -update rewrites both lists.
func TestAdminRoutesAreDocumented(t *testing.T) {
	routes := registeredRoutes(t)
	for file, replace := range map[string]func(string) (string, error){
		"doc.go":    func(s string) (string, error) { return replaceDocGoList(s, docGoRouteList(routes)) },
		"README.md": func(s string) (string, error) { return replaceReadmeList(s, readmeRouteList(routes)) },
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		want, err := replace(string(b))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if want == string(b) {
			continue
		}
		if *updateRouteDocs {
			if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: admin route list rewritten", file)
			continue
		}
		t.Errorf("%s's admin route list is not adminRoutes' (admin.go): run go test ./mock-server -run TestAdminRoutesAreDocumented -update (or make generate), then review the diff", file)
	}
}
