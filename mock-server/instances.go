package mockserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// DefaultStateRoot is where a bundled server without an explicit state dir
// keeps its state: <root>/<instance>/ (sandboxes, egress sockets, audit.jsonl),
// locked by the live instance. Every start reaps the instances whose lock is
// free (their server died: SIGKILL, crash), so nothing leaks for good.
const DefaultStateRoot = "/var/lib/osb-capstone/instances"

// volumesDirName is the directory under the state root that holds named
// volumes by default (BundledConfig.VolumeRoot): never an instance, never reaped.
const volumesDirName = "volumes"

// lockName is the lock file in every state dir: flock(LOCK_EX) held by the
// live server for as long as it runs.
const lockName = "instance.lock"

// lockStateDir takes the instance lock of dir (creating the file), or says
// which live instance holds it.
func lockStateDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, lockName))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("state dir %s is in use by a live bundled server (pid %s)", dir, strings.TrimSpace(string(b)))
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

// stateRoot returns a usable state root: root, else DefaultStateRoot, else
// (not root, or /var/lib not writable) <tmp>/osb-capstone-<uid>/instances.
func stateRoot(root string) (string, error) {
	if root != "" {
		return root, os.MkdirAll(root, 0o700)
	}
	if err := os.MkdirAll(DefaultStateRoot, 0o700); err == nil {
		return DefaultStateRoot, nil
	}
	r := filepath.Join(os.TempDir(), fmt.Sprintf("osb-capstone-%d", os.Geteuid()), "instances")
	return r, os.MkdirAll(r, 0o700)
}

// openStateRootToUIDs makes the default state root (and its parent, both
// this package's) traversable, not listable, by other uids (0711), so the
// runtime's insecure mode as root can run each sandbox as a uid of its own
// (runtime.SandboxUIDBase): a sandbox's uid reaches its directory by path.
// A state root the caller named is left as it is (the runtime then says
// why sandboxes run as the server's uid).
func openStateRootToUIDs(root string) {
	if os.Geteuid() != 0 {
		return
	}
	tmpRoot := filepath.Join(os.TempDir(), fmt.Sprintf("osb-capstone-%d", os.Geteuid()), "instances")
	if root != DefaultStateRoot && root != tmpRoot {
		return
	}
	for _, d := range []string{filepath.Dir(root), root} {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() && fi.Sys().(*syscall.Stat_t).Uid == 0 {
			_ = os.Chmod(d, 0o711)
		}
	}
}

// newInstanceDir creates <root>/<instance> with its lock already held: the
// directory is prepared under a dot name and renamed into place, so a
// concurrent reaper never sees it unlocked.
func newInstanceDir(root string) (string, *os.File, error) {
	tmp, err := os.MkdirTemp(root, ".new-")
	if err != nil {
		return "", nil, err
	}
	lock, err := lockStateDir(tmp)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", nil, err
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	dir := filepath.Join(root, fmt.Sprintf("%s-%d-%s", time.Now().UTC().Format("20060102T150405"), os.Getpid(), hex.EncodeToString(rnd[:])))
	if err := os.Rename(tmp, dir); err != nil {
		lock.Close()
		_ = os.RemoveAll(tmp)
		return "", nil, err
	}
	return dir, lock, nil
}

// reapDeadInstances removes every instance under root whose lock is free:
// its sandboxes' processes, network namespaces, cgroups, disk mounts, egress
// sockets and the directory, and the deleteOnSandboxTermination volumes it
// auto-created that no live server uses (SweepNamedVolumes of its volume root). A live instance (lock held) is never touched.
// Dot-named directories (instances being created) count as dead only after a
// minute.
func reapDeadInstances(root, self string) []string {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || dir == self || e.Name() == volumesDirName {
			continue // the named volumes outlive every instance
		}
		if strings.HasPrefix(e.Name(), ".") {
			if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < time.Minute {
				continue
			}
		}
		lock, err := lockStateDir(dir)
		if err != nil {
			continue // live (or unreadable): not ours to touch
		}
		r, _ := runtime.ReapStateDir(dir)
		removed = append(removed, r...)
		volRoot := ""
		if b, err := os.ReadFile(filepath.Join(dir, volumeRootRec)); err == nil {
			volRoot = strings.TrimSpace(string(b))
		}
		// the volume root it used (it may not be this server's, or lie in
		// its dir): its owned volumes that no live server uses, its tenant
		// roots (unmounted before the dir goes)
		if filepath.IsAbs(volRoot) {
			removed = append(removed, SweepNamedVolumes(volRoot)...)
		}
		if err := os.RemoveAll(dir); err == nil {
			removed = append(removed, "instance "+dir)
		}
		lock.Close()
	}
	return removed
}

// removeStaleSockets deletes egress/<id>.sock files a dead server left in
// its state dir (called before this server's egress hub starts).
func removeStaleSockets(dir string) []string {
	socks, _ := filepath.Glob(filepath.Join(dir, "egress", "*.sock"))
	var out []string
	for _, s := range socks {
		if os.Remove(s) == nil {
			out = append(out, "socket "+s)
		}
	}
	return out
}
