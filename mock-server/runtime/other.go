//go:build !linux

package runtime

import (
	"errors"
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
