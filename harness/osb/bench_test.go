package osb

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkUpload50MB streams a 50 MB file through Upload and Download to a
// server that discards it; allocs/op and B/op show the client never holds the
// file whole (run with -benchmem).
func BenchmarkUpload50MB(b *testing.B) {
	const size = 50 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" {
			_, _ = io.Copy(w, &endlessReader{n: size})
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	c, _ := New(strings.TrimPrefix(srv.URL, "http://"), "")
	e, _ := c.ExecdAt(strings.TrimPrefix(srv.URL, "http://"), nil)
	b.SetBytes(2 * size)
	b.ReportAllocs()
	for b.Loop() {
		up, err := e.Upload(context.Background(), UploadFile{Path: "/workspace/big.csv", Content: &endlessReader{n: size}})
		if err != nil || up.Status != 200 || up.Value.Files[0].Size != size {
			b.Fatalf("upload: %v %+v", err, up)
		}
		dl, err := e.Download(context.Background(), "/workspace/big.csv", io.Discard)
		if err != nil || dl.Value.Size != size {
			b.Fatalf("download: %v", err)
		}
	}
}
