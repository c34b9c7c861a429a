package reference

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"syscall"
)

// HostInput is step 1 of the workflow: what the host knows about the CSV
// before the sandbox sees it. It is the anchor of the evidence chain: the
// upload, the sandbox's own hash in report.md and the server's audit must all
// agree with it.
type HostInput struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Lines counts physical lines ("\n"-terminated, plus an unterminated
	// last line). It differs from the row count when quoted fields contain
	// line breaks, which is exactly why rows are recomputed separately.
	Lines int64 `json:"lines"`
}

// ReadHostInput streams the file once (never holding it in memory) to get
// its size, sha256 and line count. It opens without blocking (a --csv that
// is a FIFO once hung the run at the open, deaf to SIGTERM) and refuses
// anything but a regular file.
func ReadHostInput(path string) (*HostInput, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	h := sha256.New()
	buf := make([]byte, 256<<10)
	var n, lines int64
	var last byte
	for {
		k, err := f.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			n += int64(k)
			lines += int64(bytes.Count(buf[:k], []byte{'\n'}))
			last = buf[k-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if n > 0 && last != '\n' {
		lines++
	}
	return &HostInput{Path: path, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil)), Lines: lines}, nil
}
