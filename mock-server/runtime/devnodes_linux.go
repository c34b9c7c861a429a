package runtime

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// devNodes are the device nodes a sandbox's /dev offers, as Docker's default
// /dev does (bwrap's --dev set).
var devNodes = []struct {
	name         string
	major, minor uint32
}{
	{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0},
}

// makeDevNodes creates the sandbox's own device nodes in dir, on a tiny tmpfs
// of its own (the sandbox directory itself is nodev). They are new inodes, so
// what root in the sandbox does to them (chmod, chown, unlink) never reaches
// the host's /dev; the devices cgroup still decides which devices open.
func makeDevNodes(dir string) error {
	if err := unix.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("dev dir: %w", err)
	}
	if err := unix.Mount("osb-dev", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=16k,nr_inodes=64,mode=0755"); err != nil {
		return fmt.Errorf("dev tmpfs: %w", err)
	}
	for _, d := range devNodes {
		p := filepath.Join(dir, d.name)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(d.major, d.minor))); err != nil {
			return fmt.Errorf("mknod %s: %w", d.name, err)
		}
		// The umask narrowed the mode; the process-wide umask is left alone.
		if err := unix.Chmod(p, 0o666); err != nil {
			return fmt.Errorf("chmod %s: %w", d.name, err)
		}
	}
	return nil
}
