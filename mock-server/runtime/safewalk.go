package runtime

import (
	"io/fs"
	"os"
)

// WalkEntry is one non-directory entry WalkFiles found. File is set (open,
// read-only, closed after the callback returns) only for a regular file that
// was still the same regular file when opened.
type WalkEntry struct {
	Rel  string // slash-separated path below the walked root
	Mode fs.FileMode
	Size int64
	File *os.File
}

// WalkResult says how far a walk went.
type WalkResult struct {
	Entries int    // non-directory entries seen
	Cut     string // "" (complete), "entries" (maxEntries reached) or "time" (deadline passed)
}
