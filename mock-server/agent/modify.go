package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "invalid request body: "+err.Error())
		return false
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

type moveItem struct {
	Src  string `json:"src"`
	Dest string `json:"dest"`
}

func (a *Agent) handleMove(w http.ResponseWriter, r *http.Request) {
	var items []moveItem
	if !decodeBody(w, r, &items) {
		return
	}
	for _, it := range items {
		if it.Src == "" || it.Dest == "" {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "src and dest are required")
			return
		}
		src, err1 := a.resolve(it.Src)
		dst, err2 := a.resolve(it.Dest)
		if err := errors.Join(err1, err2); err != nil {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "invalid path: "+err.Error())
			return
		}
		if _, err := os.Lstat(src); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				writeError(w, http.StatusNotFound, "FILE_NOT_FOUND", "file not found: "+it.Src)
				return
			}
			writeError(w, fsStatus(err), fsCode(err), err.Error())
			return
		}
		if _, err := os.Lstat(dst); err == nil {
			writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", "destination already exists: "+it.Dest)
			return
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			writeError(w, fsStatus(err), fsCode(err), "create destination directory: "+err.Error())
			return
		}
		if err := os.Rename(src, dst); err != nil {
			if errors.Is(err, syscall.EXDEV) {
				err = moveAcross(src, dst)
			}
			if err != nil {
				writeError(w, fsStatus(err), fsCode(err), "move: "+err.Error())
				return
			}
		}
	}
	w.WriteHeader(http.StatusOK)
}

// moveAcross moves src to dst across mounts (/workspace ↔ /tmp are separate
// bind mounts here, one overlay filesystem in a Docker container): a copy,
// then the source removed. It refuses what rename(2) refuses in a container
// instead of copying without end: a directory into its own subtree (EINVAL,
// e.g. "/" → "/workspace/root", which copied the sandbox's root into itself
// until something broke), and a mount point, or a tree holding one (EBUSY,
// e.g. "/", "/proc", "/workspace"). A copy that fails half-way is removed:
// the source is untouched and nothing is left behind.
func moveAcross(src, dst string) error { return moveAcrossWith(src, dst, copyTree) }

// moveAcrossWith is moveAcross copying with copyFn (copyTree; a test's
// fails a copy half-way).
func moveAcrossWith(src, dst string, copyFn func(src, dst string) error) error {
	if rel, err := filepath.Rel(src, dst); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
		return &os.LinkError{Op: "rename", Old: src, New: dst, Err: syscall.EINVAL}
	}
	for _, m := range mountPoints() {
		if m == src || strings.HasPrefix(m, strings.TrimSuffix(src, "/")+"/") {
			return &os.LinkError{Op: "rename", Old: src, New: dst, Err: syscall.EBUSY}
		}
	}
	if err := copyFn(src, dst); err != nil {
		_ = os.RemoveAll(dst)
		return err
	}
	return os.RemoveAll(src)
}

// mountPoints lists this process's mount points (its mount namespace: the
// sandbox's own), from /proc/self/mountinfo (field 5, octal escapes undone).
func mountPoints() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		out = append(out, unescapeMountinfo(f[4]))
	}
	return out
}

// unescapeMountinfo undoes the kernel's \ooo escapes (space, tab, newline, backslash).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// copyTree copies across mounts (/workspace ↔ /tmp are separate bind mounts).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case fi.IsDir():
			return os.MkdirAll(target, fi.Mode().Perm())
		case fi.Mode().IsRegular():
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fi.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil
	})
}

type permission struct {
	Owner string `json:"owner,omitempty"`
	Group string `json:"group,omitempty"`
	Mode  int    `json:"mode"`
}

func (a *Agent) handlePermissions(w http.ResponseWriter, r *http.Request) {
	var req map[string]permission
	if !decodeBody(w, r, &req) {
		return
	}
	for _, p := range sortedKeys(req) {
		perm := req[p]
		host, ok := a.resolveOr400(w, p)
		if !ok {
			return
		}
		if _, err := os.Lstat(host); err != nil {
			writeStatError(w, err, "file", p)
			return
		}
		if msg, bad := existingNonRegular(host, p); bad {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", msg)
			return
		}
		if err := chownNames(host, perm.Owner, perm.Group); err != nil {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("chown %s: %v", p, err))
			return
		}
		if !applyMode(w, host, perm.Mode) {
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

type replaceItem struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// maxReplaceBytes caps the file POST /files/replace reads whole into memory
// (a documented limit): a larger file answers 413 and is left unchanged.
var maxReplaceBytes int64 = 64 << 20

func (a *Agent) handleReplace(w http.ResponseWriter, r *http.Request) {
	var req map[string]replaceItem
	if !decodeBody(w, r, &req) {
		return
	}
	verbose, _ := strconv.ParseBool(r.URL.Query().Get("verbose"))
	counts := map[string]map[string]int{}
	for _, p := range sortedKeys(req) {
		it := req[p]
		if it.Old == "" {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "old must not be empty for "+p)
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
		tooBig := func() {
			writeError(w, http.StatusRequestEntityTooLarge, "INVALID_REQUEST_BODY",
				fmt.Sprintf("%s is larger than the replace limit of %d bytes; nothing was changed", p, maxReplaceBytes))
		}
		if fi.Size() > maxReplaceBytes {
			f.Close()
			tooBig()
			return
		}
		// Read at most the cap even when stat says less (/proc files say 0).
		b, err := io.ReadAll(io.LimitReader(f, maxReplaceBytes+1))
		f.Close()
		if err != nil {
			writeError(w, fsStatus(err), fsCode(err), err.Error())
			return
		}
		if int64(len(b)) > maxReplaceBytes {
			tooBig()
			return
		}
		old := []byte(it.Old)
		n := bytes.Count(b, old)
		if n > 0 {
			if err := os.WriteFile(host, bytes.ReplaceAll(b, old, []byte(it.New)), fi.Mode().Perm()); err != nil {
				writeError(w, fsStatus(err), fsCode(err), err.Error())
				return
			}
		}
		counts[p] = map[string]int{"replacedCount": n}
	}
	if verbose {
		writeJSON(w, http.StatusOK, counts)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (a *Agent) handleListDir(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := q.Get("path")
	if p == "" {
		writeError(w, http.StatusBadRequest, "MISSING_QUERY", "missing query parameter: path")
		return
	}
	depth := 1
	if s := q.Get("depth"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "depth must be a non-negative integer")
			return
		}
		depth = n
	}
	root, ok := a.resolveOr400(w, p)
	if !ok {
		return
	}
	fi, err := os.Lstat(root)
	if err != nil {
		writeStatError(w, err, "directory", p)
		return
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", p+" is a symbolic link; pass the real directory")
		return
	}
	if !fi.IsDir() {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", p+" is not a directory")
		return
	}
	out := []fileInfo{}
	var walk func(dir string, level int)
	walk = func(dir string, level int) {
		if level > depth || len(out) >= maxSearchResults {
			return
		}
		ents, err := os.ReadDir(dir) // sorted by name
		if err != nil {
			return
		}
		for _, e := range ents {
			full := filepath.Join(dir, e.Name())
			info, err := e.Info()
			if err != nil {
				continue
			}
			out = append(out, infoOf(a.clientPath(full), info))
			if e.IsDir() && info.Mode()&fs.ModeSymlink == 0 {
				walk(full, level+1)
			}
		}
	}
	walk(root, 1)
	writeJSON(w, http.StatusOK, out)
}

func (a *Agent) handleMkdir(w http.ResponseWriter, r *http.Request) {
	var req map[string]permission
	if !decodeBody(w, r, &req) {
		return
	}
	for _, p := range sortedKeys(req) {
		perm := req[p]
		host, ok := a.resolveOr400(w, p)
		if !ok {
			return
		}
		_, statErr := os.Stat(host)
		existed := statErr == nil
		if err := os.MkdirAll(host, 0o755); err != nil {
			writeError(w, fsStatus(err), fsCode(err), err.Error())
			return
		}
		if existed {
			continue
		}
		if !applyMode(w, host, perm.Mode) {
			return
		}
		if err := chownNames(host, perm.Owner, perm.Group); err != nil {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("chown %s: %v", p, err))
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (a *Agent) handleRmdir(w http.ResponseWriter, r *http.Request) {
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
		if a.clientPath(host) == "/" {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "refusing to remove /")
			return
		}
		err := os.RemoveAll(host)
		if err != nil && errors.Is(err, syscall.EROFS) && dockerPlainDirs[a.clientPath(host)] {
			err = removeContents(host)
		}
		if err != nil {
			writeError(w, fsStatus(err), fsCode(err), err.Error())
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// dockerPlainDirs are the sandbox's writable directories that are bind
// mounts on a read-only root here but plain directories of the container's
// writable layer on Docker. Real execd's `rm -rf` (os.RemoveAll) removes
// them there and answers 200; here the mount point itself cannot go, so its
// contents are removed, the empty directory stays, and the answer is the
// same 200 (deviation execd-rmdir-mountpoint). A mount inside one (a volume)
// still fails as it does on Docker (device or resource busy).
var dockerPlainDirs = map[string]bool{"/workspace": true, "/tmp": true, "/root": true, "/var": true}

// removeContents removes everything in dir (never following a symbolic
// link out of it: os.RemoveAll removes a link, not its target) and leaves
// dir itself.
func removeContents(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// applyMode chmods host to mode (octal digits as a decimal int, CONTRACT §2.5;
// 0 skips the chmod), or answers the error and returns false.
func applyMode(w http.ResponseWriter, host string, mode int) bool {
	if mode == 0 {
		return true
	}
	m, ok := parseMode(mode)
	if !ok {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("invalid mode %d (octal digits expected, e.g. 644)", mode))
		return false
	}
	if err := os.Chmod(host, m); err != nil {
		writeError(w, fsStatus(err), fsCode(err), err.Error())
		return false
	}
	return true
}
