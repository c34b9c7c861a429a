package agent

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// specialFiles makes a FIFO, a link to /dev/zero and a link to a /proc file
// in the agent's workspace (the test agent runs unsandboxed, so the links
// reach the host's device and proc files, as /dev and /proc do in a sandbox).
func specialFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	ws := filepath.Join(root, "workspace")
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(ws, "zero")); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"fifo": "/workspace/fifo", "device": "/workspace/zero"}
}

func do(t *testing.T, method, url, ct, body string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v (a hang here is the bug)", method, url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b)
}

// TestNonRegularFilesRejected: devices and FIFOs through
// every files API that reads or writes content answer a clear 4xx at once,
// never block, never read without bound.
func TestNonRegularFilesRejected(t *testing.T) {
	_, srv, root := testAgent(t)
	for kind, p := range specialFiles(t, root) {
		q := "?path=" + p
		checks := []struct {
			name string
			do   func() (int, string)
		}{
			{"download", func() (int, string) { return do(t, "GET", srv.URL+"/files/download"+q, "", "") }},
			{"download offset", func() (int, string) { return do(t, "GET", srv.URL+"/files/download"+q+"&offset=1", "", "") }},
			{"download range", func() (int, string) {
				return do(t, "GET", srv.URL+"/files/download"+q, "", "", "Range", "bytes=1-100")
			}},
			{"replace", func() (int, string) {
				return do(t, "POST", srv.URL+"/files/replace", "application/json", `{"`+p+`":{"old":"a","new":"b"}}`)
			}},
			{"upload onto", func() (int, string) {
				body, ct := uploadBody(t, p, []byte("x"))
				return do(t, "POST", srv.URL+"/files/upload", ct, body.String())
			}},
			{"permissions", func() (int, string) {
				return do(t, "POST", srv.URL+"/files/permissions", "application/json", `{"`+p+`":{"mode":600}}`)
			}},
		}
		for _, c := range checks {
			st, body := c.do()
			if st < 400 || st >= 500 || !strings.Contains(body, "not a regular file") {
				t.Errorf("%s on a %s: %d %s", c.name, kind, st, body)
			}
		}
		// Metadata only: info describes it without reading it.
		st, body := do(t, "GET", srv.URL+"/files/info"+q, "", "")
		if st != 200 {
			t.Errorf("info on a %s: %d %s", kind, st, body)
		}
	}
}

// TestReplaceSizeCap: replace reads the whole file, so it is capped; a file
// over the cap (also a /proc file whose stat size says 0) answers 413.
func TestReplaceSizeCap(t *testing.T) {
	old := maxReplaceBytes
	maxReplaceBytes = 64
	defer func() { maxReplaceBytes = old }()
	_, srv, root := testAgent(t)
	ws := filepath.Join(root, "workspace")
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("a", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "small.txt"), []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/self/status", filepath.Join(ws, "status")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/workspace/big.txt", "/workspace/status"} {
		st, body := do(t, "POST", srv.URL+"/files/replace", "application/json", `{"`+p+`":{"old":"a","new":"b"}}`)
		if st != http.StatusRequestEntityTooLarge {
			t.Errorf("replace %s over the cap: %d %s", p, st, body)
		}
	}
	st, body := do(t, "POST", srv.URL+"/files/replace?verbose=true", "application/json", `{"/workspace/small.txt":{"old":"a","new":"b"}}`)
	if st != 200 || !strings.Contains(body, `"replacedCount":1`) {
		t.Errorf("replace within the cap: %d %s", st, body)
	}
}
