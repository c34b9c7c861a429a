package stubs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Dist is one distribution file served by the index.
type Dist struct {
	File    string `json:"file"`
	Project string `json:"project"` // PEP 503-normalised
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	path    string
}

// PackageIndex is a PEP 503 simple index (pypi.org) and file host
// (files.pythonhosted.org) on one loopback server.
//
// Routes: GET /simple/ (project list), GET /simple/<project>/ (links),
// GET /packages/<file> (the file). Non-normalised project names and missing
// trailing slashes are redirected (301) as PyPI does; unknown projects are
// 404, which pip reports as "No matching distribution found" — unlike a
// network-policy denial, which never reaches this server.
//
// Links: when the request's Host is a public name (as when the egress
// gateway forwards pypi.org with its original Host header) they are absolute,
// <scheme>://files.pythonhosted.org/packages/<file>#sha256=<hex>, where
// scheme is X-Forwarded-Proto if it is "http" or "https" and "https"
// otherwise (the gateway terminates TLS for port 443). When the Host is a
// loopback address (a direct test) the links are /packages/<file>#sha256=…
// on this same server, so a direct client is never sent off the machine.
type PackageIndex struct {
	*server
	dir string

	mu       sync.RWMutex
	projects map[string][]Dist
	files    map[string]Dist
	reason   string
}

// NewPackageIndex scans dir for distributions (*.whl, *.tar.gz, *.zip) and
// starts the index. A missing or empty dir still gives a valid, empty index;
// Available then reports false with the reason.
func NewPackageIndex(dir string) (*PackageIndex, error) {
	p := &PackageIndex{dir: dir}
	if err := p.Rescan(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/simple", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/simple/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/simple/", p.serveSimple)
	mux.HandleFunc("/packages/", p.serveFile)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not found: this stub serves /simple/ and /packages/", http.StatusNotFound)
	})
	s, err := startServer(mux)
	if err != nil {
		return nil, err
	}
	p.server = s
	return p, nil
}

// Dir is the wheels directory.
func (p *PackageIndex) Dir() string { return p.dir }

// SimpleURL is the loopback index URL, for pip --index-url.
func (p *PackageIndex) SimpleURL() string { return p.URL() + "/simple/" }

// Available reports whether any distribution is served, and why not.
func (p *PackageIndex) Available() (bool, string) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.reason == "", p.reason
}

// Has reports whether a project (any spelling) has at least one file.
func (p *PackageIndex) Has(project string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.projects[NormalizeProject(project)]) > 0
}

// Dists lists every served file, sorted.
func (p *PackageIndex) Dists() []Dist {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []Dist
	for _, d := range p.files {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// Rescan re-reads the directory (hashes are computed streaming).
func (p *PackageIndex) Rescan() error {
	projects := map[string][]Dist{}
	files := map[string]Dist{}
	reason := ""
	entries, err := os.ReadDir(p.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		reason = fmt.Sprintf("wheel directory %s does not exist (run `make deps`)", p.dir)
	case err != nil:
		return fmt.Errorf("stubs: reading %s: %w", p.dir, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		proj, ver, ok := parseDistName(e.Name())
		if !ok {
			continue
		}
		path := filepath.Join(p.dir, e.Name())
		sum, size, err := hashFile(path)
		if err != nil {
			return fmt.Errorf("stubs: hashing %s: %w", path, err)
		}
		d := Dist{File: e.Name(), Project: proj, Version: ver, SHA256: sum, Size: size, path: path}
		projects[proj] = append(projects[proj], d)
		files[d.File] = d
	}
	if reason == "" && len(files) == 0 {
		reason = fmt.Sprintf("no distributions (*.whl, *.tar.gz, *.zip) in %s (run `make deps`)", p.dir)
	}
	for k := range projects {
		sort.Slice(projects[k], func(i, j int) bool { return projects[k][i].File < projects[k][j].File })
	}
	p.mu.Lock()
	p.projects, p.files, p.reason = projects, files, reason
	p.mu.Unlock()
	return nil
}

var projectSep = regexp.MustCompile(`[-_.]+`)

// NormalizeProject is PEP 503 name normalisation.
func NormalizeProject(name string) string {
	return strings.ToLower(projectSep.ReplaceAllString(name, "-"))
}

// parseDistName extracts project and version from a wheel
// (name-ver-…-….whl, name with '_' for '-') or an sdist (name-ver.tar.gz).
func parseDistName(file string) (project, version string, ok bool) {
	switch {
	case strings.HasSuffix(file, ".whl"):
		parts := strings.Split(strings.TrimSuffix(file, ".whl"), "-")
		if len(parts) < 5 {
			return "", "", false
		}
		return NormalizeProject(parts[0]), parts[1], true
	case strings.HasSuffix(file, ".tar.gz"), strings.HasSuffix(file, ".zip"):
		base := strings.TrimSuffix(strings.TrimSuffix(file, ".tar.gz"), ".zip")
		i := strings.LastIndexByte(base, '-')
		if i <= 0 {
			return "", "", false
		}
		return NormalizeProject(base[:i]), base[i+1:], true
	}
	return "", "", false
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func (p *PackageIndex) serveSimple(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/simple/")
	if rest == "" {
		p.serveRoot(w)
		return
	}
	name := strings.TrimSuffix(rest, "/")
	if strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	norm := NormalizeProject(name)
	if norm != name || !strings.HasSuffix(rest, "/") {
		http.Redirect(w, r, "/simple/"+norm+"/", http.StatusMovedPermanently)
		return
	}
	p.mu.RLock()
	dists := p.projects[norm]
	p.mu.RUnlock()
	if len(dists) == 0 {
		http.Error(w, "404 Not Found: no project "+norm+" on this index", http.StatusNotFound)
		return
	}
	base := p.fileBase(r)
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"1.0\">\n")
	fmt.Fprintf(&b, "    <title>Links for %s</title>\n  </head>\n  <body>\n    <h1>Links for %s</h1>\n", html.EscapeString(norm), html.EscapeString(norm))
	for _, d := range dists {
		fmt.Fprintf(&b, "    <a href=\"%s\">%s</a><br/>\n",
			html.EscapeString(base+"/packages/"+d.File+"#sha256="+d.SHA256), html.EscapeString(d.File))
	}
	b.WriteString("  </body>\n</html>\n")
	writeHTML(w, b.String())
}

func (p *PackageIndex) serveRoot(w http.ResponseWriter) {
	p.mu.RLock()
	names := make([]string, 0, len(p.projects))
	for n := range p.projects {
		names = append(names, n)
	}
	p.mu.RUnlock()
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"1.0\">\n    <title>Simple index</title>\n  </head>\n  <body>\n")
	for _, n := range names {
		fmt.Fprintf(&b, "    <a href=\"/simple/%s/\">%s</a><br/>\n", html.EscapeString(n), html.EscapeString(n))
	}
	b.WriteString("  </body>\n</html>\n")
	writeHTML(w, b.String())
}

func writeHTML(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, body)
}

// fileBase is "" (same server) for a loopback Host, else the files host URL.
func (p *PackageIndex) fileBase(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" || host == "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	scheme := "https"
	if fp := strings.ToLower(r.Header.Get("X-Forwarded-Proto")); fp == "http" || fp == "https" {
		scheme = fp
	}
	return scheme + "://" + FilesHost
}

func (p *PackageIndex) serveFile(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/packages/")
	p.mu.RLock()
	d, ok := p.files[name]
	p.mu.RUnlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(d.path)
	if err != nil {
		http.Error(w, "file vanished: "+err.Error(), http.StatusNotFound)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, d.File, fi.ModTime(), f)
}
