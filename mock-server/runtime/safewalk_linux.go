//go:build linux

package runtime

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// WalkFiles walks the tree below root (a directory the sandbox may write to)
// without ever following a path the sandbox controls: every step opens one
// name relative to an already-open directory with openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV and
// O_NOFOLLOW (plain openat with O_NOFOLLOW on kernels without openat2), so a
// directory swapped for a symbolic link mid-walk fails to open instead of
// leading to the host. Only regular files are opened (O_NONBLOCK, checked
// with fstat after the open, so a FIFO or device swapped in never blocks and
// is never read); other entries are reported with their type and no File.
// The walk stops after maxEntries entries or at deadline; Cut says why.
func WalkFiles(root string, maxEntries int, deadline time.Time, fn func(WalkEntry)) (WalkResult, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return WalkResult{}, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	w := &walker{max: maxEntries, deadline: deadline, fn: fn}
	w.dir(fd, "", 0)
	return w.res, nil
}

// WalkOpen is WalkFiles from an open descriptor (O_PATH is enough) of a
// directory, e.g. a volume held since the sandbox was created, so nothing is
// resolved by path again; for a regular file (a single-file volume) its one
// entry has Rel "". The descriptor stays open.
func WalkOpen(f *os.File, maxEntries int, deadline time.Time, fn func(WalkEntry)) (WalkResult, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return WalkResult{}, err
	}
	var res WalkResult
	var werr error
	// Control keeps the descriptor from being closed (and its number reused) meanwhile.
	if err := rc.Control(func(fd uintptr) { res, werr = walkOpenFD(int(fd), f.Name(), maxEntries, deadline, fn) }); err != nil {
		return WalkResult{}, err
	}
	return res, werr
}

func walkOpenFD(held int, name string, maxEntries int, deadline time.Time, fn func(WalkEntry)) (WalkResult, error) {
	var st unix.Stat_t
	if err := unix.Fstat(held, &st); err != nil {
		return WalkResult{}, &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		fd, err := unix.Openat(held, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return WalkResult{}, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		w := &walker{max: maxEntries, deadline: deadline, fn: fn}
		w.dir(fd, "", 0)
		return w.res, nil
	case unix.S_IFREG:
		if maxEntries < 1 {
			return WalkResult{Cut: "entries"}, nil
		}
		// Reopened through the held descriptor (never by path); checked to be the same inode.
		fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(held), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			fn(WalkEntry{Mode: fileMode(st.Mode), Size: st.Size})
			return WalkResult{Entries: 1}, nil
		}
		rf := os.NewFile(uintptr(fd), name)
		defer rf.Close()
		var now unix.Stat_t
		if unix.Fstat(fd, &now) != nil || now.Mode&unix.S_IFMT != unix.S_IFREG || now.Ino != st.Ino || now.Dev != st.Dev {
			fn(WalkEntry{Mode: fileMode(st.Mode), Size: st.Size})
			return WalkResult{Entries: 1}, nil
		}
		fn(WalkEntry{Mode: fileMode(now.Mode), Size: now.Size, File: rf})
		return WalkResult{Entries: 1}, nil
	}
	return WalkResult{}, nil
}

type walker struct {
	max      int
	deadline time.Time
	fn       func(WalkEntry)
	res      WalkResult
}

const walkMaxDepth = 64

func (w *walker) stop() bool {
	if w.res.Cut != "" {
		return true
	}
	if w.res.Entries >= w.max {
		w.res.Cut = "entries"
		return true
	}
	if !w.deadline.IsZero() && time.Now().After(w.deadline) {
		w.res.Cut = "time"
		return true
	}
	return false
}

// dir walks the open directory fd (closed on return); rel is its path below root.
func (w *walker) dir(fd int, rel string, depth int) {
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	for !w.stop() {
		ents, err := d.ReadDir(256)
		for _, e := range ents {
			if w.stop() {
				return
			}
			w.entry(fd, e.Name(), path.Join(rel, e.Name()), depth)
		}
		if err != nil || len(ents) == 0 {
			return
		}
	}
}

func (w *walker) entry(dirfd int, name, rel string, depth int) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return // vanished
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if depth >= walkMaxDepth {
			return
		}
		fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return // swapped for something else: not followed
		}
		w.dir(fd, rel, depth+1)
	case unix.S_IFREG:
		w.res.Entries++
		fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
		if err != nil {
			w.fn(WalkEntry{Rel: rel, Mode: fileMode(st.Mode), Size: st.Size})
			return
		}
		f := os.NewFile(uintptr(fd), rel)
		defer f.Close()
		var now unix.Stat_t
		if unix.Fstat(fd, &now) != nil || now.Mode&unix.S_IFMT != unix.S_IFREG || now.Ino != st.Ino || now.Dev != st.Dev {
			// Swapped between the stat and the open: report what was listed, read nothing.
			w.fn(WalkEntry{Rel: rel, Mode: fileMode(st.Mode), Size: st.Size})
			return
		}
		w.fn(WalkEntry{Rel: rel, Mode: fileMode(now.Mode), Size: now.Size, File: f})
	default:
		w.res.Entries++
		w.fn(WalkEntry{Rel: rel, Mode: fileMode(st.Mode), Size: st.Size})
	}
}

var noOpenat2 atomic.Bool // set once openat2 answered ENOSYS

// openBeneath opens one name inside dirfd without following any link.
func openBeneath(dirfd int, name string, flags int) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !noOpenat2.Load() {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV})
		if !errors.Is(err, unix.ENOSYS) {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	return unix.Openat(dirfd, name, flags, 0)
}

func fileMode(m uint32) fs.FileMode {
	out := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		out |= fs.ModeDir
	case unix.S_IFLNK:
		out |= fs.ModeSymlink
	case unix.S_IFIFO:
		out |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		out |= fs.ModeSocket
	case unix.S_IFCHR:
		out |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		out |= fs.ModeDevice
	}
	return out
}
