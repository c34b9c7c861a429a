package runtime

import (
	"path/filepath"
	"time"
)

// WritableDir is one place a sandbox can write: the canary scan and the final
// manifest walk every one of them with the same rules (WalkFiles: nothing the
// sandbox controls is followed, only regular files are read, bounded).
type WritableDir struct {
	Path   string // the in-sandbox path: /workspace, /tmp, /root, /var, /dev/shm or a volume's mount path
	Volume bool   // a writable volume: its content outlives the sandbox and may be shared with others
	walk   func(maxEntries int, deadline time.Time, fn func(WalkEntry)) (WalkResult, error)
}

// Walk walks the directory (WalkFiles rules); for a volume that is a single
// file the one entry has Rel "".
func (d WritableDir) Walk(maxEntries int, deadline time.Time, fn func(WalkEntry)) (WalkResult, error) {
	if d.walk == nil {
		return WalkResult{}, nil
	}
	return d.walk(maxEntries, deadline, fn)
}

// WritableLister is implemented by sandboxes that list their writable places.
type WritableLister interface {
	Writable() []WritableDir
}

// baseWritable maps the sandbox directory's writable subdirectories to where
// the sandbox sees them. The rest of the sandbox's filesystem is read-only
// (/ and /dev are remounted read-only; /dev/shm is bound from "shm").
var baseWritable = []struct{ sub, path string }{
	{"workspace", "/workspace"}, {"tmp", "/tmp"}, {"home", "/root"}, {"var", "/var"}, {"shm", "/dev/shm"},
}

// Writable lists every place sb can write: its own when it says
// (WritableLister: also its writable volumes), else the standard
// subdirectories of its Dir.
func Writable(sb Sandbox) []WritableDir {
	if l, ok := sb.(WritableLister); ok {
		return l.Writable()
	}
	return dirWritable(sb.Dir())
}

func dirWritable(dir string) []WritableDir {
	out := make([]WritableDir, 0, len(baseWritable))
	for _, b := range baseWritable {
		root := filepath.Join(dir, b.sub)
		out = append(out, WritableDir{Path: b.path, walk: func(maxEntries int, deadline time.Time, fn func(WalkEntry)) (WalkResult, error) {
			return WalkFiles(root, maxEntries, deadline, fn)
		}})
	}
	return out
}
