package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

type uploadMeta struct {
	Path  string `json:"path"`
	Owner string `json:"owner,omitempty"`
	Group string `json:"group,omitempty"`
	Mode  int    `json:"mode,omitempty"`
}

// handleUpload streams multipart pairs (metadata, file) straight to disk.
func (a *Agent) handleUpload(w http.ResponseWriter, r *http.Request) {
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_FILE", "expected multipart/form-data: "+err.Error())
		return
	}
	var pending *uploadMeta
	metas, files := 0, 0
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "INVALID_FILE", "malformed multipart body: "+err.Error())
			return
		}
		switch part.FormName() {
		case "metadata":
			if part.FileName() == "" {
				part.Close()
				writeError(w, http.StatusBadRequest, "INVALID_FILE_METADATA",
					`the metadata part must be a file part (Content-Disposition: form-data; name="metadata"; filename="metadata")`)
				return
			}
			if pending != nil {
				part.Close()
				writeError(w, http.StatusBadRequest, "INVALID_FILE", "metadata and file parts must come in pairs (metadata without file)")
				return
			}
			var m uploadMeta
			err := json.NewDecoder(io.LimitReader(part, 1<<20)).Decode(&m)
			part.Close()
			if err != nil {
				writeError(w, http.StatusBadRequest, "INVALID_FILE_METADATA", "metadata is not valid JSON: "+err.Error())
				return
			}
			if m.Path == "" {
				writeError(w, http.StatusBadRequest, "INVALID_FILE_METADATA", "metadata.path is required")
				return
			}
			metas++
			pending = &m
		case "file":
			if part.FileName() == "" {
				part.Close()
				writeError(w, http.StatusBadRequest, "INVALID_FILE_CONTENT", `the file part must carry a filename (Content-Disposition: form-data; name="file"; filename="...")`)
				return
			}
			if pending == nil {
				part.Close()
				if metas == 0 {
					writeError(w, http.StatusBadRequest, "INVALID_FILE_METADATA", "file part without a preceding metadata part")
				} else {
					writeError(w, http.StatusBadRequest, "INVALID_FILE", "metadata and file parts must come in pairs (file without metadata)")
				}
				return
			}
			files++
			status, code, msg := a.storeUpload(*pending, part)
			part.Close()
			if status != 0 {
				writeError(w, status, code, msg)
				return
			}
			pending = nil
		default:
			part.Close()
		}
	}
	switch {
	case pending != nil && files == 0:
		writeError(w, http.StatusBadRequest, "INVALID_FILE_CONTENT", "missing file part")
		return
	case pending != nil:
		writeError(w, http.StatusBadRequest, "INVALID_FILE", "metadata and file parts must come in pairs (metadata without file)")
		return
	case metas == 0:
		writeError(w, http.StatusBadRequest, "INVALID_FILE_METADATA", "missing metadata part")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// storeUpload writes one file via a temp file + rename. Returns status 0 on success.
func (a *Agent) storeUpload(m uploadMeta, src io.Reader) (int, string, string) {
	dst, err := a.resolve(m.Path)
	if err != nil {
		return http.StatusBadRequest, "INVALID_FILE_METADATA", "invalid path: " + err.Error()
	}
	// As real execd (O_CREATE with 0777, then the umask): a new file is 0755,
	// an existing one keeps its mode; an explicit mode wins.
	mode := fs.FileMode(0o755)
	if fi, err := os.Stat(dst); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	if m.Mode != 0 {
		fm, ok := parseMode(m.Mode)
		if !ok {
			return http.StatusBadRequest, "INVALID_FILE_METADATA", fmt.Sprintf("invalid mode %d (octal digits expected, e.g. 644)", m.Mode)
		}
		mode = fm
	}
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		return http.StatusBadRequest, "INVALID_FILE_METADATA", fmt.Sprintf("%s is a directory", m.Path)
	}
	if msg, bad := existingNonRegular(dst, m.Path); bad {
		return http.StatusBadRequest, "INVALID_FILE_METADATA", msg
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fsStatus(err), fsCode(err), "create parent directory: " + err.Error()
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".osb-upload-*")
	if err != nil {
		return fsStatus(err), fsCode(err), "create file: " + err.Error()
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	limit := a.cfg.MaxUploadBytes
	if limit <= 0 {
		limit = runtime.DefaultMaxUploadBytes
	}
	n, err := io.Copy(tmp, io.LimitReader(src, limit+1))
	if err != nil {
		if status := fsStatus(err); status != http.StatusInternalServerError {
			return status, fsCode(err), "store file: " + err.Error() // e.g. the sandbox's disk is full
		}
		return http.StatusBadRequest, "INVALID_FILE_CONTENT", "read file part: " + err.Error()
	}
	if n > limit {
		return http.StatusRequestEntityTooLarge, "INVALID_FILE_CONTENT",
			fmt.Sprintf("%s: the file is larger than the upload limit of %d bytes; nothing was stored", m.Path, limit)
	}
	if err := tmp.Close(); err != nil {
		return http.StatusInternalServerError, "RUNTIME_ERROR", err.Error()
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return http.StatusInternalServerError, "RUNTIME_ERROR", err.Error()
	}
	if err := chownNames(tmp.Name(), m.Owner, m.Group); err != nil {
		return http.StatusBadRequest, "INVALID_FILE_METADATA", fmt.Sprintf("owner/group %q/%q: %v", m.Owner, m.Group, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fsStatus(err), fsCode(err), "store file: " + err.Error()
	}
	ok = true
	return 0, "", ""
}

// fsStatus maps filesystem errors that are the client's doing to 4xx.
func fsStatus(err error) int {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return http.StatusNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrExist), isErrno(err, "read-only file system"),
		isErrno(err, "not a directory"), isErrno(err, "is a directory"):
		return http.StatusBadRequest
	case isErrno(err, "no space left on device"), isErrno(err, "disk quota exceeded"):
		return http.StatusInsufficientStorage
	}
	return http.StatusInternalServerError
}

func fsCode(err error) string {
	switch fsStatus(err) {
	case http.StatusNotFound:
		return "FILE_NOT_FOUND"
	case http.StatusBadRequest:
		return "INVALID_REQUEST_BODY"
	}
	return "RUNTIME_ERROR"
}

func isErrno(err error, text string) bool {
	return err != nil && strings.Contains(err.Error(), text)
}

func (a *Agent) handleDownload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := q.Get("path")
	if p == "" {
		writeError(w, http.StatusBadRequest, "MISSING_QUERY", "missing query parameter: path")
		return
	}
	host, ok := a.resolveOr400(w, p)
	if !ok {
		return
	}
	f, fi := openRegular(w, host, p)
	if f == nil {
		return
	}
	defer f.Close()
	rangeHdr := r.Header.Get("Range")
	if q.Has("offset") || q.Has("limit") {
		if rangeHdr != "" {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "offset/limit and Range are mutually exclusive")
			return
		}
		a.downloadLines(w, f, q.Get("offset"), q.Get("limit"))
		return
	}
	size := fi.Size()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", contentDisposition(filepath.Base(host)))
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("Last-Modified", fi.ModTime().UTC().Format(http.TimeFormat))
	start, length, status := int64(0), size, http.StatusOK
	if rangeHdr != "" {
		s, e, ok, satisfiable := parseRange(rangeHdr, size)
		if ok && !satisfiable {
			// As real execd (Go's http.ServeContent): a text body.
			w.Header().Del("Content-Disposition")
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			http.Error(w, "invalid range: failed to overlap", http.StatusRequestedRangeNotSatisfiable)
			return
		}
		if ok {
			start, length, status = s, e-s+1, http.StatusPartialContent
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", s, e, size))
		}
	}
	if start > 0 {
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", err.Error())
			return
		}
	}
	w.Header().Set("Content-Length", strconv.FormatInt(length, 10))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = io.CopyN(w, f, length)
	}
}

// parseRange reads a single "bytes=" range. ok=false means "ignore the header"
// (malformed or multi-range: the whole file is served, as RFC 9110 allows).
func parseRange(h string, size int64) (start, end int64, ok, satisfiable bool) {
	spec, found := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, false
	}
	a, b, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, false
	}
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if a == "" { // suffix: last b bytes
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false, false
		}
		if n == 0 || size == 0 {
			return 0, 0, true, false
		}
		if n > size {
			n = size
		}
		return size - n, size - 1, true, true
	}
	s, err := strconv.ParseInt(a, 10, 64)
	if err != nil || s < 0 {
		return 0, 0, false, false
	}
	e := size - 1
	if b != "" {
		if e2, err := strconv.ParseInt(b, 10, 64); err != nil || e2 < s {
			return 0, 0, false, false
		} else if e2 < e {
			e = e2
		}
	}
	if s >= size {
		return 0, 0, true, false
	}
	return s, e, true, true
}

// downloadLines serves a 1-based line slice as text/plain, as real execd:
// each line without its terminator ("\n" or "\r\n"), lines joined by "\n",
// no newline after the last one. It streams: a line of any length is copied
// in pieces, never held whole in memory.
func (a *Agent) downloadLines(w http.ResponseWriter, f *os.File, offS, limS string) {
	offset, limit := int64(1), int64(-1)
	if offS != "" {
		n, err := strconv.ParseInt(offS, 10, 64)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("invalid query parameter 'offset': %s (a line number ≥ 1)", offS))
			return
		}
		offset = n
	}
	if limS != "" {
		n, err := strconv.ParseInt(limS, 10, 64)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("invalid query parameter 'limit': %s (an integer ≥ 1)", limS))
			return
		}
		limit = n
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	br := bufio.NewReaderSize(f, 64<<10)
	var line, written int64
	inLine := false // inside a line (some of it read)
	var pendingCR bool
	for limit < 0 || written < limit {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if !inLine {
				line++
				inLine = true
				if line >= offset && written > 0 {
					_, _ = io.WriteString(w, "\n")
				}
				pendingCR = false
			}
			end := chunk[len(chunk)-1] == '\n'
			body := chunk
			if end {
				body = body[:len(body)-1]
			}
			if line >= offset {
				// A "\r" is dropped only when it ends the line; one held back at
				// the end of a piece is written if the line goes on.
				if pendingCR && len(body) > 0 {
					_, _ = io.WriteString(w, "\r")
				}
				pendingCR = false
				if n := len(body); n > 0 && body[n-1] == '\r' {
					body = body[:n-1]
					pendingCR = !end
				}
				_, _ = w.Write(body)
			}
			if end {
				if line >= offset {
					written++
				}
				inLine = false
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if inLine && line >= offset && pendingCR {
				pendingCR = false // a trailing "\r" at EOF ends the line: dropped
			}
			return
		}
	}
}

func (a *Agent) handleInfo(w http.ResponseWriter, r *http.Request) {
	out := map[string]fileInfo{}
	for _, p := range r.URL.Query()["path"] {
		host, ok := a.resolveOr400(w, p)
		if !ok {
			return
		}
		fi, err := lstatInfo(host, a.clientPath(host))
		if err != nil {
			writeStatError(w, err, "file", p)
			return
		}
		out[p] = fi
	}
	writeJSON(w, http.StatusOK, out)
}

const maxSearchResults = 100000

func (a *Agent) handleSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := q.Get("path")
	if p == "" {
		writeError(w, http.StatusBadRequest, "MISSING_QUERY", "missing query parameter: path")
		return
	}
	pattern := q.Get("pattern")
	if pattern == "" {
		pattern = "**"
	}
	// The glob is matched against the basename; "**" therefore means "*".
	glob := strings.ReplaceAll(pattern, "**", "*")
	if i := strings.LastIndex(glob, "/"); i >= 0 {
		glob = glob[i+1:]
		if glob == "" {
			glob = "*"
		}
	}
	if _, err := filepath.Match(glob, ""); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("invalid pattern %q: %v", pattern, err))
		return
	}
	root, ok := a.resolveOr400(w, p)
	if !ok {
		return
	}
	st, err := os.Stat(root)
	if err != nil {
		writeStatError(w, err, "directory", p)
		return
	}
	if !st.IsDir() {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", p+" is not a directory")
		return
	}
	out := []fileInfo{}
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if ok, _ := filepath.Match(glob, d.Name()); !ok {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			out = append(out, infoOf(a.clientPath(path), fi))
		}
		if len(out) >= maxSearchResults {
			return fs.SkipAll
		}
		return nil
	})
	writeJSON(w, http.StatusOK, out)
}

func (a *Agent) handleDeleteFiles(w http.ResponseWriter, r *http.Request) {
	paths := r.URL.Query()["path"]
	if len(paths) == 0 {
		writeError(w, http.StatusBadRequest, "MISSING_QUERY", "missing query parameter: path")
		return
	}
	for _, p := range paths {
		host, ok := a.resolveOr400(w, p)
		if !ok {
			return
		}
		fi, err := os.Lstat(host)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			writeError(w, fsStatus(err), fsCode(err), err.Error())
			return
		}
		if fi.IsDir() {
			writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", p+" is a directory (use DELETE /directories)")
			return
		}
		if err := os.Remove(host); err != nil && !errors.Is(err, fs.ErrNotExist) {
			writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", err.Error())
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// resolveOr400 maps a sandbox path to the agent's view of it, or answers 400.
func (a *Agent) resolveOr400(w http.ResponseWriter, p string) (string, bool) {
	host, err := a.resolve(p)
	if err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "invalid path: "+err.Error())
		return "", false
	}
	return host, true
}

// writeStatError answers a failed stat or open of p: 404 FILE_NOT_FOUND
// ("<what> not found") when it does not exist, else the file-system error.
func writeStatError(w http.ResponseWriter, err error, what, p string) {
	if errors.Is(err, fs.ErrNotExist) {
		writeError(w, http.StatusNotFound, "FILE_NOT_FOUND", what+" not found: "+p)
		return
	}
	writeError(w, fsStatus(err), fsCode(err), err.Error())
}
