//go:build linux

package runtime_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFilesUploadDownloadRoundTrip(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	data := make([]byte, 1<<20+7)
	_, _ = rand.Read(data)
	copy(data, []byte{0, 0, '\r', '\n', 0xff})
	if resp, body := upload(t, sb, "/workspace/sub/dir/blob.bin", data, true); resp.StatusCode != 200 || len(body) != 0 {
		t.Fatalf("upload → %d %q", resp.StatusCode, body)
	}
	resp, body := get(t, sb, "/files/download?path="+url.QueryEscape("/workspace/sub/dir/blob.bin"), nil)
	if resp.StatusCode != 200 || !bytes.Equal(body, data) {
		t.Fatalf("download → %d, %d bytes, equal=%v", resp.StatusCode, len(body), bytes.Equal(body, data))
	}
	if resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("Content-Length") != "1048583" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), "blob.bin") {
		t.Errorf("download headers %v", resp.Header)
	}
	// The command side sees the same bytes.
	r := sh(t, sb, "sha256sum /workspace/sub/dir/blob.bin | cut -c1-16; stat -c %a sub/dir/blob.bin")
	if len(r.stdout()) != 2 || r.stdout()[1] != "644" {
		t.Errorf("in-sandbox view %v", r.stdout())
	}
	// Range.
	resp, body = get(t, sb, "/files/download?path=sub/dir/blob.bin", map[string]string{"Range": "bytes=10-19"})
	if resp.StatusCode != 206 || !bytes.Equal(body, data[10:20]) || resp.Header.Get("Content-Range") != "bytes 10-19/1048583" {
		t.Errorf("range → %d %q %v", resp.StatusCode, resp.Header.Get("Content-Range"), bytes.Equal(body, data[10:20]))
	}
	resp, body = get(t, sb, "/files/download?path=sub/dir/blob.bin", map[string]string{"Range": "bytes=-5"})
	if resp.StatusCode != 206 || !bytes.Equal(body, data[len(data)-5:]) {
		t.Errorf("suffix range → %d", resp.StatusCode)
	}
	resp, body = get(t, sb, "/files/download?path=sub/dir/blob.bin", map[string]string{"Range": "bytes=99999999-"})
	// As real execd (Go's http.ServeContent): 416 with a text body.
	if resp.StatusCode != 416 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || len(body) == 0 {
		t.Errorf("unsatisfiable range → %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// Line reads.
	_ = sh(t, sb, "printf 'l1\\nl2\\nl3\\nl4\\n' > /workspace/lines.txt")
	resp, body = get(t, sb, "/files/download?path=/workspace/lines.txt&offset=2&limit=2", nil)
	if resp.StatusCode != 200 || string(body) != "l2\nl3" { // real execd: no newline after the last line
		t.Errorf("offset/limit → %d %q", resp.StatusCode, body)
	}
	resp, _ = get(t, sb, "/files/download?path=/workspace/lines.txt&offset=2", map[string]string{"Range": "bytes=0-1"})
	if resp.StatusCode != 400 {
		t.Errorf("offset+Range → %d", resp.StatusCode)
	}
	// Errors of §2.5.
	if resp, body := get(t, sb, "/files/download?path=/workspace/missing", nil); resp.StatusCode != 404 || errorCode(body) != "FILE_NOT_FOUND" {
		t.Errorf("missing → %d %s", resp.StatusCode, body)
	}
	if resp, body := get(t, sb, "/files/download", nil); resp.StatusCode != 400 || errorCode(body) != "MISSING_QUERY" {
		t.Errorf("no path → %d %s", resp.StatusCode, body)
	}
	if resp, body := upload(t, sb, "/workspace/x", []byte("x"), false); resp.StatusCode != 400 || errorCode(body) != "INVALID_FILE_METADATA" {
		t.Errorf("metadata without filename → %d %s", resp.StatusCode, body)
	}
}

func TestFilesQueryAndModify(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	_ = sh(t, sb, "mkdir -p /workspace/d/e && echo hello world > /workspace/d/a.txt && echo x > /workspace/d/e/b.csv && ln -s a.txt /workspace/d/link && chmod 755 /workspace/d/a.txt")
	resp, body := get(t, sb, "/files/info?path=/workspace/d/a.txt&path=d/e", nil)
	var info map[string]map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(body, &info) != nil {
		t.Fatalf("info → %d %s", resp.StatusCode, body)
	}
	a := info["/workspace/d/a.txt"]
	if a["type"] != "file" || a["mode"] != float64(755) || a["size"] != float64(12) || a["owner"] != "root" || a["path"] != "/workspace/d/a.txt" {
		t.Errorf("info a.txt %v", a)
	}
	if info["d/e"]["type"] != "directory" {
		t.Errorf("info d/e %v", info["d/e"])
	}
	if resp, body := get(t, sb, "/files/info", nil); resp.StatusCode != 200 || string(body) != "{}" {
		t.Errorf("info without path → %d %s", resp.StatusCode, body)
	}
	if resp, _ := get(t, sb, "/files/info?path=/nope", nil); resp.StatusCode != 404 {
		t.Errorf("info missing → %d", resp.StatusCode)
	}
	resp, body = get(t, sb, "/files/search?path=/workspace/d&pattern=*.csv", nil)
	var found []map[string]any
	_ = json.Unmarshal(body, &found)
	if resp.StatusCode != 200 || len(found) != 1 || found[0]["path"] != "/workspace/d/e/b.csv" {
		t.Errorf("search → %d %s", resp.StatusCode, body)
	}
	if resp, _ := get(t, sb, "/files/search?path=/workspace/none", nil); resp.StatusCode != 404 {
		t.Errorf("search missing root → %d", resp.StatusCode)
	}
	resp, body = get(t, sb, "/directories/list?path=/workspace/d&depth=2", nil)
	var list []map[string]any
	_ = json.Unmarshal(body, &list)
	var names []string
	for _, e := range list {
		names = append(names, e["path"].(string)+":"+e["type"].(string))
	}
	if got := strings.Join(names, ","); got != "/workspace/d/a.txt:file,/workspace/d/e:directory,/workspace/d/e/b.csv:file,/workspace/d/link:symlink" {
		t.Errorf("list → %d %s", resp.StatusCode, got)
	}
	if resp, _ := get(t, sb, "/directories/list?path=/workspace/d/link", nil); resp.StatusCode != 400 {
		t.Errorf("list symlink root → %d", resp.StatusCode)
	}
	if resp, _ := get(t, sb, "/directories/list?path=/workspace/zzz", nil); resp.StatusCode != 404 {
		t.Errorf("list missing → %d", resp.StatusCode)
	}
	// replace, mv (dest parent created; existing dest 500; missing src 404), permissions, delete, mkdir, rmdir.
	resp, body = do(t, sb, http.MethodPost, "/files/replace?verbose=true", strings.NewReader(`{"/workspace/d/a.txt":{"old":"world","new":"there"}}`), nil)
	if resp.StatusCode != 200 || string(body) != `{"/workspace/d/a.txt":{"replacedCount":1}}` {
		t.Errorf("replace → %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, sb, http.MethodPost, "/files/replace", strings.NewReader(`{"/workspace/d/a.txt":{"old":"","new":"x"}}`), nil); resp.StatusCode != 400 {
		t.Errorf("replace empty old → %d", resp.StatusCode)
	}
	if resp, body := do(t, sb, http.MethodPost, "/files/mv", strings.NewReader(`[{"src":"/workspace/d/a.txt","dest":"/tmp/new/place/a.txt"}]`), nil); resp.StatusCode != 200 {
		t.Errorf("mv across mounts → %d %s", resp.StatusCode, body)
	}
	if r := sh(t, sb, "cat /tmp/new/place/a.txt"); strings.Join(r.stdout(), "") != "hello there" {
		t.Errorf("after mv: %v", r.stdout())
	}
	if resp, _ := do(t, sb, http.MethodPost, "/files/mv", strings.NewReader(`[{"src":"/workspace/d/a.txt","dest":"/tmp/x"}]`), nil); resp.StatusCode != 404 {
		t.Errorf("mv missing src → %d", resp.StatusCode)
	}
	if resp, _ := do(t, sb, http.MethodPost, "/files/mv", strings.NewReader(`[{"src":"/workspace/d/e/b.csv","dest":"/tmp/new/place/a.txt"}]`), nil); resp.StatusCode != 500 {
		t.Errorf("mv onto existing → %d", resp.StatusCode)
	}
	if resp, _ := do(t, sb, http.MethodPost, "/files/permissions", strings.NewReader(`{"/workspace/d/e/b.csv":{"mode":600}}`), nil); resp.StatusCode != 200 {
		t.Errorf("permissions → %d", resp.StatusCode)
	}
	if r := sh(t, sb, "stat -c %a /workspace/d/e/b.csv"); strings.Join(r.stdout(), "") != "600" {
		t.Errorf("mode after chmod %v", r.stdout())
	}
	if resp, _ := do(t, sb, http.MethodDelete, "/files?path=/workspace/nothing", nil, nil); resp.StatusCode != 200 {
		t.Errorf("delete missing → %d", resp.StatusCode)
	}
	if resp, body := do(t, sb, http.MethodDelete, "/files?path=/workspace/d/e", nil, nil); resp.StatusCode != 500 || errorCode(body) != "RUNTIME_ERROR" {
		t.Errorf("delete directory → %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, sb, http.MethodDelete, "/files?path=/workspace/d/e/b.csv", nil, nil); resp.StatusCode != 200 {
		t.Errorf("delete → %d", resp.StatusCode)
	}
	if resp, _ := do(t, sb, http.MethodPost, "/directories", strings.NewReader(`{"/workspace/m/n":{"mode":700}}`), nil); resp.StatusCode != 200 {
		t.Errorf("mkdir → %d", resp.StatusCode)
	}
	if fi, err := os.Stat(filepath.Join(sb.Dir(), "workspace", "m", "n")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("mkdir result %v %v", fi, err)
	}
	if resp, _ := do(t, sb, http.MethodDelete, "/directories?path=/workspace/m", nil, nil); resp.StatusCode != 200 {
		t.Errorf("rmdir → %d", resp.StatusCode)
	}
	if resp, _ := do(t, sb, http.MethodDelete, "/directories?path=/workspace/m", nil, nil); resp.StatusCode != 200 {
		t.Errorf("rmdir missing → %d", resp.StatusCode)
	}
	// Writing where the sandbox is read-only is a client error, not a 500.
	if resp, body := upload(t, sb, "/etc/evil", []byte("x"), true); resp.StatusCode != 400 {
		t.Errorf("upload to read-only /etc → %d %s", resp.StatusCode, body)
	}
}
