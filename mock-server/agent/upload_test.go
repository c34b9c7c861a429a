package agent

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// uploadBody builds the SDKs' multipart pair: a metadata part with a filename, then the file.
func uploadBody(t *testing.T, path string, content []byte) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="metadata"; filename="metadata"`)
	pw, _ := mw.CreatePart(h)
	_ = json.NewEncoder(pw).Encode(map[string]any{"path": path})
	fw, _ := mw.CreateFormFile("file", "f")
	_, _ = fw.Write(content)
	_ = mw.Close()
	return &b, mw.FormDataContentType()
}

// uploadBodyMode is uploadBody with an explicit metadata mode.
func uploadBodyMode(t *testing.T, path string, content []byte, mode int) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="metadata"; filename="metadata"`)
	pw, _ := mw.CreatePart(h)
	_ = json.NewEncoder(pw).Encode(map[string]any{"path": path, "mode": mode})
	fw, _ := mw.CreateFormFile("file", "f")
	_, _ = fw.Write(content)
	_ = mw.Close()
	return &b, mw.FormDataContentType()
}

// An upload over the limit is refused with 413 and leaves nothing behind;
// one within the limit is stored.
func TestUploadLimit(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := New(runtime.AgentConfig{Root: root, Workspace: "/workspace", MaxUploadBytes: 1024}, nil)
	h := a.Handler()

	body, ct := uploadBody(t, "/workspace/big.bin", bytes.Repeat([]byte("x"), 2048))
	req := httptest.NewRequest("POST", "/files/upload", body)
	req.Header.Set("Content-Type", ct)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "upload limit") {
		t.Fatalf("oversized upload: %d %s", rec.Code, rec.Body.String())
	}
	entries, _ := os.ReadDir(filepath.Join(root, "workspace"))
	if len(entries) != 0 {
		t.Fatalf("an oversized upload left %d entries behind: %v", len(entries), entries)
	}

	body, ct = uploadBody(t, "/workspace/ok.bin", bytes.Repeat([]byte("y"), 1024))
	req = httptest.NewRequest("POST", "/files/upload", body)
	req.Header.Set("Content-Type", ct)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("upload at the limit: %d %s", rec.Code, rec.Body.String())
	}
	got, err := os.ReadFile(filepath.Join(root, "workspace", "ok.bin"))
	if err != nil || len(got) != 1024 {
		t.Fatalf("stored %d bytes, err %v", len(got), err)
	}
}
