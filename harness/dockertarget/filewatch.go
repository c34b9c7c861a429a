//go:build linux

package dockertarget

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FileCreated is a file that appeared in a watched directory of a sandbox.
type FileCreated struct {
	Path string    // as the sandbox sees it (/workspace/pwned)
	At   time.Time // when the host saw it (the arming scan's time for one already there)
	// Present: it was already there when the watch was armed.
	Present bool
}

// FileWatch is a host-side watch of what a sandbox's container writes into
// one directory: the container's overlay upper directory (what it wrote, as
// opposed to its image's layers) holds that directory once anything is
// written into it, and inotify on the host sees every name created or moved
// in there, however briefly it existed (WatchCreates).
type FileWatch struct {
	// Armed is when the watch began (the root's watch, and the directory's
	// when it was there already): what the directory held then is reported
	// as present, and every name created after it as created.
	Armed time.Time

	dirArmed time.Time // when the directory's own watch was added (zero: not yet)

	mu      sync.Mutex
	created []FileCreated
	err     error
	done    chan struct{}
}

// DirArmed is when the directory's own watch was added (zero: the directory
// has not appeared yet). A name created and removed between the directory's
// appearance and this moment is not seen; what was still there is.
func (w *FileWatch) DirArmed() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dirArmed
}

// Created returns what the watch saw so far, and an error if it stopped
// before the container was removed or ctx ended.
func (w *FileWatch) Created() ([]FileCreated, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]FileCreated(nil), w.created...), w.err
}

func (w *FileWatch) add(c FileCreated) {
	w.mu.Lock()
	w.created = append(w.created, c)
	w.mu.Unlock()
}

// WatchCreates watches the directory dir (absolute, as the sandbox sees it;
// one level below the root, such as /workspace) of sandbox id's container
// from the host, until ctx ends or the container is removed. It needs the
// engine on this machine with the overlay2 storage driver.
func (t *Target) WatchCreates(ctx context.Context, sandboxID, dir string) (*FileWatch, error) {
	if t.pool == nil {
		return nil, errors.New("no engine connection")
	}
	name := "sandbox-" + sandboxID
	c, err := t.pool.Client.InspectContainer(name)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s has no container %s: %w", sandboxID, name, err)
	}
	if c.GraphDriver == nil || c.GraphDriver.Name != "overlay2" || c.GraphDriver.Data["UpperDir"] == "" {
		return nil, fmt.Errorf("the engine's storage driver is not overlay2 (it keeps no upper directory of what the container wrote)")
	}
	return watchUpper(ctx, c.GraphDriver.Data["UpperDir"], dir)
}

// watchUpper watches upper/dir for names created (dir: one component below
// the root, as the sandbox sees it). The directory may not exist in upper
// yet (overlay copies a directory up on the first write into it): the
// root is watched for it to appear.
func watchUpper(ctx context.Context, upper, dir string) (*FileWatch, error) {
	rel := strings.Trim(filepath.Clean(dir), "/")
	if rel == "" || strings.Contains(rel, "/") {
		return nil, fmt.Errorf("watch %q: one directory below the root", dir)
	}
	if fi, err := os.Stat(upper); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("the container's upper directory %s is not readable here: %v", upper, err)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	f := os.NewFile(uintptr(fd), "inotify") // non-blocking: reads go through the poller, Close ends them
	const rootMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_ONLYDIR
	const dirMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ONLYDIR
	rootWD, err := unix.InotifyAddWatch(fd, upper, rootMask)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("watching %s: %w", upper, err)
	}
	w := &FileWatch{done: make(chan struct{})}
	target := filepath.Join(upper, rel)
	dirWD := -1
	// arm adds the directory's watch (once it exists) and reports what it
	// already holds; a name created between the two is seen by both, at
	// worst twice.
	arm := func(now time.Time, present bool) {
		if dirWD >= 0 {
			return
		}
		wd, err := unix.InotifyAddWatch(fd, target, dirMask)
		if err != nil {
			return // not there yet: the root's watch says when it appears
		}
		dirWD = wd
		w.mu.Lock()
		w.dirArmed = time.Now().UTC()
		w.mu.Unlock()
		entries, _ := os.ReadDir(target)
		for _, e := range entries {
			w.add(FileCreated{Path: "/" + rel + "/" + e.Name(), At: now, Present: present})
		}
	}
	w.Armed = time.Now().UTC()
	arm(w.Armed, true)
	go func() {
		defer close(w.done)
		stop := context.AfterFunc(ctx, func() { _ = f.Close() })
		defer stop()
		defer f.Close()
		buf := make([]byte, 64*1024)
		for {
			n, err := f.Read(buf)
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, os.ErrClosed) {
					w.mu.Lock()
					w.err = fmt.Errorf("reading the watch: %w", err)
					w.mu.Unlock()
				}
				return
			}
			now := time.Now().UTC()
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				name := strings.TrimRight(string(nameBytes), "\x00")
				off += unix.SizeofInotifyEvent + int(ev.Len)
				switch {
				case ev.Mask&unix.IN_Q_OVERFLOW != 0:
					w.mu.Lock()
					w.err = errors.New("the watch's event queue overflowed: some names may be missing")
					w.mu.Unlock()
				case int(ev.Wd) == rootWD && ev.Mask&(unix.IN_DELETE_SELF|unix.IN_IGNORED) != 0:
					return // the container was removed
				case int(ev.Wd) == rootWD && name == rel:
					arm(now, false) // the directory was copied up or made: what it holds now was created after arming
				case int(ev.Wd) == dirWD && name != "":
					w.add(FileCreated{Path: "/" + rel + "/" + name, At: now})
				}
			}
		}
	}()
	return w, nil
}
