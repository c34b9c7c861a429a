//go:build !linux

package runtime

import (
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// WalkFiles outside Linux: a plain walk that never follows symbolic links
// (sandboxes are not supported here; kept so the package builds).
func WalkFiles(root string, maxEntries int, deadline time.Time, fn func(WalkEntry)) (WalkResult, error) {
	var res WalkResult
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if res.Entries >= maxEntries {
			res.Cut = "entries"
			return fs.SkipAll
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			res.Cut = "time"
			return fs.SkipAll
		}
		res.Entries++
		rel, _ := filepath.Rel(root, p)
		e := WalkEntry{Rel: filepath.ToSlash(rel), Mode: d.Type()}
		if info, err := d.Info(); err == nil {
			e.Size, e.Mode = info.Size(), info.Mode()
		}
		if d.Type().IsRegular() {
			if f, err := os.Open(p); err == nil {
				e.File = f
				defer f.Close()
			}
		}
		fn(e)
		return nil
	})
	return res, err
}

// WalkOpen outside Linux: volumes are not supported here.
func WalkOpen(f *os.File, maxEntries int, deadline time.Time, fn func(WalkEntry)) (WalkResult, error) {
	return WalkResult{}, nil
}
