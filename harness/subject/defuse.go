package subject

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// maxDefuseEntries bounds the walk of a subject's output directory.
const maxDefuseEntries = 100000

// defuseOutputs removes from the subject's output directory, once the subject
// and its descendants are gone, every entry no reader may open: a FIFO (an
// open blocks until a writer comes, so a subject that left
// out/summary.json as a FIFO hung the whole grading run, deaf to SIGTERM), a
// socket, a device, and a symbolic link that does not lead to a regular file
// (out/report.md → /dev/zero would be read without end). Regular files,
// directories and links to regular files stay. It returns what it removed,
// "relative/path: kind", sorted.
func defuseOutputs(dir string) []string {
	var removed []string
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: nothing to open there either
		}
		if n++; n > maxDefuseEntries {
			return filepath.SkipAll
		}
		kind := ""
		switch t := d.Type(); {
		case t.IsRegular(), t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return nil
			}
			kind = "symbolic link to no regular file"
		case t&fs.ModeNamedPipe != 0:
			kind = "fifo"
		case t&fs.ModeSocket != 0:
			kind = "socket"
		case t&fs.ModeDevice != 0:
			kind = "device"
		default:
			kind = "special file"
		}
		if os.Remove(p) == nil {
			rel, _ := filepath.Rel(dir, p)
			removed = append(removed, rel+": "+kind)
		}
		return nil
	})
	sort.Strings(removed)
	return removed
}
