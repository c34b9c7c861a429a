package osb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"path"
	"strings"
)

// UploadFile is one file for Upload. Content is read once, streamed into the
// multipart body; it is never held whole in memory.
type UploadFile struct {
	Path    string
	Content io.Reader
	// Mode is octal digits as a decimal int (644), 0 = omitted.
	Mode  int
	Owner string
	Group string
}

// UploadedFile is what was actually sent for one part.
type UploadedFile struct {
	Path   string
	Size   int64
	SHA256 string
}

// UploadResult lists the parts sent (filled even if the server rejected them).
type UploadResult struct {
	Files []UploadedFile
}

type uploadMeta struct {
	Path  string `json:"path"`
	Mode  int    `json:"mode,omitempty"`
	Owner string `json:"owner,omitempty"`
	Group string `json:"group,omitempty"`
}

// Upload calls POST /files/upload with one (metadata, file) part pair per
// file. The metadata part carries filename="metadata" as every SDK sends it
// (CONTRACT §2.5). The body is produced on the fly through a pipe, with the
// sha256 and size of each file computed while streaming.
func (e *Execd) Upload(ctx context.Context, files ...UploadFile) (*Result[UploadResult], error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	sent := make([]UploadedFile, len(files))
	done := make(chan error, 1)
	go func() {
		err := writeUpload(mw, files, sent)
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
		done <- err
	}()
	var note strings.Builder
	note.WriteString("multipart/form-data upload:")
	for _, f := range files {
		fmt.Fprintf(&note, " %s", f.Path)
	}
	c := e.call("POST", "/files/upload", nil)
	c.stream, c.contentType, c.bodyNote = pr, mw.FormDataContentType(), note.String()
	m, err := e.c.do(ctx, c)
	// If the server answered before reading everything, unblock the writer.
	pr.CloseWithError(io.ErrClosedPipe)
	werr := <-done
	res := &Result[UploadResult]{Meta: m, Value: UploadResult{Files: sent}}
	if err != nil {
		return res, err
	}
	if werr != nil && werr != io.ErrClosedPipe && m.OK() {
		return res, fmt.Errorf("osb: upload: reading content: %w", werr)
	}
	res.Decoded = m.OK()
	return res, nil
}

func writeUpload(mw *multipart.Writer, files []UploadFile, sent []UploadedFile) error {
	for i, f := range files {
		mh := textproto.MIMEHeader{}
		mh.Set("Content-Disposition", `form-data; name="metadata"; filename="metadata"`)
		mh.Set("Content-Type", "application/json")
		part, err := mw.CreatePart(mh)
		if err != nil {
			return err
		}
		meta, _ := json.Marshal(uploadMeta{Path: f.Path, Mode: f.Mode, Owner: f.Owner, Group: f.Group})
		if _, err := part.Write(meta); err != nil {
			return err
		}
		fh := textproto.MIMEHeader{}
		fh.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, path.Base(f.Path)))
		fh.Set("Content-Type", "application/octet-stream")
		part, err = mw.CreatePart(fh)
		if err != nil {
			return err
		}
		h := sha256.New()
		var n int64
		if f.Content != nil {
			n, err = io.Copy(io.MultiWriter(part, h), f.Content)
			if err != nil {
				return err
			}
		}
		sent[i] = UploadedFile{Path: f.Path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	}
	return nil
}

// Download is what a successful download delivered.
type Download struct {
	Size        int64
	SHA256      string
	ContentType string
}

// Download calls GET /files/download?path= and streams a 200/206 body to w,
// hashing it on the way. Any other status keeps its body in Meta.Body and
// writes nothing to w.
func (e *Execd) Download(ctx context.Context, p string, w io.Writer) (*Result[Download], error) {
	c := e.call("GET", "/files/download", url.Values{"path": {p}})
	c.accept = "application/octet-stream"
	var h hash.Hash = sha256.New()
	var n int64
	c.sinkWhen = func(s int) bool { return s == 200 || s == 206 }
	c.sink = func(r io.Reader) error {
		var err error
		n, err = io.Copy(io.MultiWriter(w, h), r)
		return err
	}
	c.respNote = func() string {
		return fmt.Sprintf("[%d bytes streamed to the caller, sha256 %s]", n, hex.EncodeToString(h.Sum(nil)))
	}
	m, err := e.c.do(ctx, c)
	res := &Result[Download]{Meta: m}
	if m.Status == 200 || m.Status == 206 {
		res.Value = Download{Size: n, SHA256: hex.EncodeToString(h.Sum(nil)), ContentType: m.ContentType()}
		res.Decoded = err == nil
	}
	return res, err
}

func jsonBody(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("osb: encode request: %w", err)
	}
	return b, nil
}
