// Package regularfile reads a file that a submission controls, safely: a
// FIFO, socket or device in its place never blocks the harness, a symbolic
// link is never followed (a summary.json linked to /etc/shadow is refused,
// and its target is never named), and a huge file (a 1 TiB sparse report.md)
// never fills the harness's memory.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read opens path without blocking (a FIFO would otherwise wait for a writer
// forever) and without following a symbolic link in its last component,
// refuses anything but a regular file, and reads at most limit+1 bytes, so a
// caller sees that a file is over its limit (len > limit) without reading all
// of it. A missing file's error satisfies errors.Is(err, os.ErrNotExist); a
// symbolic link's satisfies errors.Is(err, ErrSymlink).
func Read(path string, limit int64) ([]byte, error) {
	f, _, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// ErrSymlink is why a symbolic link is refused.
var ErrSymlink = errors.New("is a symbolic link, which the grader never follows")

// TooLargeError is a file over the cap the grader reads.
type TooLargeError struct {
	Path  string
	Size  int64 // bytes the file claims (its stat size), or at least Limit+1
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the grader's cap of %d bytes for this file", e.Path, e.Size, e.Limit)
}

// ReadMax is Read for a caller that wants the whole file or an error: a file
// over limit bytes is a *TooLargeError, decided from its size before any byte
// is read (a sparse 1 TiB file costs nothing), and checked again while
// reading (a file that grows after the stat is still cut at limit+1).
func ReadMax(path string, limit int64) ([]byte, error) {
	f, st, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, &TooLargeError{Path: path, Size: st.Size(), Limit: limit}
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Path: path, Size: int64(len(b)), Limit: limit}
	}
	return b, nil
}

// Open opens path as Read does (no blocking, no symbolic link, regular files
// only) for a caller that streams it; the caller bounds what it reads.
func Open(path string) (*os.File, os.FileInfo, error) { return open(path) }

func open(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, nil, fmt.Errorf("%s %w", path, ErrSymlink)
		}
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, st, nil
}
