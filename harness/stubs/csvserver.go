package stubs

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// CSVServer serves input files on loopback URLs (the {csv_url} input).
// Files are streamed from disk (Range supported), never loaded whole.
type CSVServer struct {
	*server
	mu    sync.RWMutex
	files map[string]string // URL path → host path
	n     int
}

// NewCSVServer starts an empty server; add files with Add.
func NewCSVServer() (*CSVServer, error) {
	c := &CSVServer{files: map[string]string{}}
	s, err := startServer(http.HandlerFunc(c.serve))
	if err != nil {
		return nil, err
	}
	c.server = s
	return c, nil
}

// Add serves the file at path and returns its URL,
// http://127.0.0.1:port/data/<n>/<basename>.
func (c *CSVServer) Add(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("stubs: csv file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", errors.New("stubs: csv file is not a regular file: " + path)
	}
	c.mu.Lock()
	c.n++
	p := "/data/" + strconv.Itoa(c.n) + "/" + filepath.Base(path)
	c.files[p] = path
	c.mu.Unlock()
	return c.URL() + (&url.URL{Path: p}).EscapedPath(), nil
}

func (c *CSVServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	c.mu.RLock()
	path, ok := c.files[r.URL.Path]
	c.mu.RUnlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, "file unavailable", http.StatusNotFound)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		http.Error(w, "file unavailable", http.StatusNotFound)
		return
	}
	ct := "application/octet-stream"
	if strings.HasSuffix(strings.ToLower(path), ".csv") {
		ct = "text/csv"
	}
	w.Header().Set("Content-Type", ct)
	http.ServeContent(w, r, filepath.Base(path), fi.ModTime(), f)
}
