// Package regularfile reads a file that a submission controls, safely: a
// FIFO, socket or device in its place never blocks the harness, and a huge
// file never fills the harness's memory.
package regularfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read opens path without blocking (a FIFO would otherwise wait for a writer
// forever), refuses anything but a regular file, and reads at most limit+1
// bytes, so a caller sees that a file is over its limit (len > limit) without
// reading all of it. A missing file's error satisfies errors.Is(err,
// os.ErrNotExist).
func Read(path string, limit int64) ([]byte, error) {
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
	return io.ReadAll(io.LimitReader(f, limit+1))
}
