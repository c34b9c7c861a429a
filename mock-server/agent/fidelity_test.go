package agent

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUploadModeLikeExecd: real execd creates an uploaded
// file with 0777 minus the umask (0755), keeps an existing file's mode, and
// applies an explicit mode.
func TestUploadModeLikeExecd(t *testing.T) {
	_, srv, root := testAgent(t)
	ws := filepath.Join(root, "workspace")
	if err := os.WriteFile(filepath.Join(ws, "old.sh"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	upload := func(p string, mode int) {
		body, ct := uploadBody(t, p, []byte("#!/bin/sh\necho hi\n"))
		if mode != 0 {
			body, ct = uploadBodyMode(t, p, []byte("#!/bin/sh\necho hi\n"), mode)
		}
		if st, b := do(t, "POST", srv.URL+"/files/upload", ct, body.String()); st != http.StatusOK {
			t.Fatalf("upload %s: %d %s", p, st, b)
		}
	}
	upload("/workspace/new.sh", 0)
	upload("/workspace/old.sh", 0)
	upload("/workspace/explicit.sh", 640)
	for name, want := range map[string]os.FileMode{"new.sh": 0o755, "old.sh": 0o600, "explicit.sh": 0o640} {
		fi, err := os.Stat(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", name, fi.Mode().Perm(), want)
		}
	}
}

// TestLineRangeLikeExecd: as real execd, offset/limit reads join the lines
// with "\n" and add no newline after the last one; "\r\n" is stripped too.
func TestLineRangeLikeExecd(t *testing.T) {
	_, srv, root := testAgent(t)
	ws := filepath.Join(root, "workspace")
	if err := os.WriteFile(filepath.Join(ws, "l.txt"), []byte("line1\nline2\r\nline3\nline4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	if err := os.WriteFile(filepath.Join(ws, "long.txt"), []byte("a\n"+long+"\r\nb"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"l.txt&offset=2&limit=2": "line2\nline3",
		"l.txt&offset=3":         "line3\nline4",
		"l.txt&offset=9":         "",
		"long.txt&offset=2":      long + "\nb",
		"long.txt&limit=1":       "a",
	}
	for q, want := range cases {
		st, got := do(t, "GET", srv.URL+"/files/download?path=/workspace/"+q, "", "")
		if st != http.StatusOK || got != want {
			t.Errorf("%s: %d %q (len %d), want len %d", q, st, got[:min(len(got), 40)], len(got), len(want))
		}
	}
	if st, _ := do(t, "GET", srv.URL+"/files/download?path=/workspace/l.txt&limit=0", "", ""); st != http.StatusBadRequest {
		t.Errorf("limit=0: %d, want 400 as real execd", st)
	}
}

// TestBackgroundLogsByteCursor: a background command's logs
// are its raw combined output from a byte offset (real execd seeks its log
// file); the cursor header is the offset after the last byte; an unfinished
// last line gets no "\n"; a foreground command has no logs (400, as real).
func TestBackgroundLogsByteCursor(t *testing.T) {
	_, srv, _ := testAgent(t)
	res := runStream(t, srv.URL, map[string]any{"command": `printf 'a\nbb\r\npartial'; echo err >&2`, "background": true}, 0)
	if res.id == "" || res.terminal != "execution_complete" {
		t.Fatalf("background start %+v", res)
	}
	get := func(q string) (int, string, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/command/" + res.id + "/logs" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := new(strings.Builder)
		_, _ = io.Copy(b, resp.Body)
		return resp.StatusCode, b.String(), resp.Header.Get("EXECD-COMMANDS-TAIL-CURSOR")
	}
	deadline := time.Now().Add(5 * time.Second)
	var body, cur string
	for time.Now().Before(deadline) {
		_, body, cur = get("")
		if strings.Contains(body, "err") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := "a\nbb\r\npartialerr\n"
	if body != want || cur != strconv.Itoa(len(want)) {
		t.Fatalf("logs %q cursor %s, want %q cursor %d", body, cur, want, len(want))
	}
	if st, body, cur := get("?cursor=2"); st != 200 || body != want[2:] || cur != strconv.Itoa(len(want)) {
		t.Errorf("cursor=2: %d %q %s", st, body, cur)
	}
	if st, body, cur := get("?cursor=1000"); st != 200 || body != "" || cur != "1000" {
		t.Errorf("cursor past the end: %d %q %s", st, body, cur)
	}
	fg := runStream(t, srv.URL, map[string]any{"command": "echo x"}, 0)
	resp, err := http.Get(srv.URL + "/command/" + fg.id + "/logs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("logs of a foreground command: %d, want 400 as real execd", resp.StatusCode)
	}
}
