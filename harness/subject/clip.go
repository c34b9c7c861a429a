package subject

import (
	"io"
	"os"
)

// ClipMarker separates head and tail in ReadClipped output (as the course's clip()).
const ClipMarker = "\n...[truncated]...\n"

// ReadClipped reads a captured output file for evidence: the whole file when
// it is at most limit bytes, else its first and last limit/2 bytes joined by
// ClipMarker, and truncated=true. Memory use is bounded by limit.
func ReadClipped(path string, limit int) (text string, truncated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if limit <= 0 {
		limit = 8192
	}
	if fi.Size() <= int64(limit) {
		b, err := io.ReadAll(io.LimitReader(f, int64(limit)))
		return string(b), false, err
	}
	half := limit / 2
	head := make([]byte, half)
	if _, err := io.ReadFull(f, head); err != nil {
		return "", false, err
	}
	tail := make([]byte, half)
	if _, err := f.ReadAt(tail, fi.Size()-int64(half)); err != nil && err != io.EOF {
		return "", false, err
	}
	return string(head) + ClipMarker + string(tail), true, nil
}
