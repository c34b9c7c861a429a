//go:build !linux

package runtime

import (
	"errors"
	"os"
	"time"
)

// Options configure the Linux runtime (unavailable on this OS).
type Options struct {
	StateDir                 string
	AgentPath                string
	AllowInsecureNoIsolation bool
	ForceInsecure            bool
	ReadyTimeout             time.Duration
	CommandCloseDelay        time.Duration
	DiskLimitBytes           int64
}

// DefaultDiskLimit is a sandbox's default disk limit (1 GiB).
const DefaultDiskLimit = 1 << 30

// NewLinux always fails outside Linux.
func NewLinux(Options) (Runtime, error) {
	return nil, errors.New("runtime: sandboxes need Linux (namespaces, bubblewrap, cgroups)")
}

// ReapStateDir does nothing outside Linux (no sandbox can have run).
func ReapStateDir(string) ([]string, error) { return nil, nil }

// ErrEscapes: see the Linux implementation.
var ErrEscapes = errors.New("path escapes its root")

// ErrNotMountable: see the Linux implementation.
var ErrNotMountable = errors.New("not a directory or regular file")

// OpenBeneath needs openat2 (Linux only).
func OpenBeneath(root, rel string, mkdirs bool) (*os.File, error) {
	return nil, errors.New("runtime: volumes need Linux")
}

// MountVolumeFS needs Linux.
func MountVolumeFS(dir string, size int64) error {
	return errors.New("runtime: volume quotas need Linux (tmpfs)")
}

// UnmountVolumeFS does nothing outside Linux.
func UnmountVolumeFS(dir string) error { return nil }
