package runtime

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrEscapes is returned (wrapped) by OpenBeneath when the path leaves the
// directory it must stay in (a "..", an absolute path, or a symbolic link
// resolving outside it).
var ErrEscapes = errors.New("path escapes its root")

// ErrNotMountable is returned (wrapped) when the path is neither a directory
// nor a regular file (a device, FIFO or socket is never bound into a sandbox).
var ErrNotMountable = errors.New("not a directory or regular file")

const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// OpenBeneath opens rel (slash-separated, relative) inside the directory
// root as an O_PATH descriptor, resolving every component — symbolic links
// included — beneath root (openat2 RESOLVE_BENEATH): nothing outside root
// can be reached, whatever links the tree holds, and the descriptor pins the
// inode so a later swap cannot redirect the mount (Mount.File). With mkdirs,
// missing directories are created (0755) beneath root first, as Docker
// creates a missing bind source. Only directories and regular files open.
func OpenBeneath(root, rel string, mkdirs bool) (*os.File, error) {
	if strings.ContainsRune(rel, 0) || path.IsAbs(rel) {
		return nil, fmt.Errorf("%q: %w", rel, ErrEscapes)
	}
	for _, c := range strings.Split(rel, "/") {
		if c == ".." {
			return nil, fmt.Errorf("%q: %w", rel, ErrEscapes)
		}
	}
	rel = path.Clean("/" + rel)[1:] // "" for the root itself
	var comps []string
	if rel != "" {
		comps = strings.Split(rel, "/")
	}
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	defer unix.Close(rootFd)
	open := func(p string, flags int) (int, error) {
		if p == "" {
			p = "."
		}
		fd, err := unix.Openat2(rootFd, p, &unix.OpenHow{Flags: uint64(flags | unix.O_PATH | unix.O_CLOEXEC), Resolve: beneath})
		switch {
		case errors.Is(err, unix.ENOSYS):
			return -1, errors.New("resolving a path safely needs openat2 (Linux 5.6 or later)")
		case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
			return -1, fmt.Errorf("%q: %w", p, ErrEscapes)
		}
		return fd, err
	}
	fd, err := open(rel, 0)
	if errors.Is(err, unix.ENOENT) && mkdirs {
		for i := range comps {
			p := strings.Join(comps[:i+1], "/")
			d, err := open(p, unix.O_DIRECTORY)
			if err == nil {
				unix.Close(d)
				continue
			}
			if !errors.Is(err, unix.ENOENT) {
				return nil, err
			}
			parent, err := open(strings.Join(comps[:i], "/"), unix.O_DIRECTORY)
			if err != nil {
				return nil, err
			}
			err = unix.Mkdirat(parent, comps[i], 0o755)
			unix.Close(parent)
			if err != nil && !errors.Is(err, unix.EEXIST) {
				return nil, fmt.Errorf("create %q: %w", p, err)
			}
		}
		fd, err = open(rel, 0)
	}
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFDIR && t != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%q: %w", rel, ErrNotMountable)
	}
	return os.NewFile(uintptr(fd), path.Join(root, rel)), nil
}
