//go:build linux

package runtime

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MountVolumeFS mounts on dir a tmpfs of size bytes, nosuid and nodev: a
// tenant's named volumes (the server's disk quota for them). Writing past
// size fails with ENOSPC; a setuid bit or a device node in it does nothing,
// on the host as in any sandbox.
func MountVolumeFS(dir string, size int64) error {
	if size <= 0 {
		return fmt.Errorf("runtime: volume quota %d: want a positive size", size)
	}
	opt := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", size, diskInodes(size))
	if err := unix.Mount("osb-volumes", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opt); err != nil {
		return fmt.Errorf("runtime: volume quota (tmpfs on %s): %w", dir, err)
	}
	return nil
}

// UnmountVolumeFS detaches what MountVolumeFS mounted (a directory that is
// not a mount point is fine).
func UnmountVolumeFS(dir string) error { return unmountDir(dir) }
