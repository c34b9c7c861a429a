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
}

// NewLinux always fails outside Linux.
func NewLinux(Options) (Runtime, error) {
	return nil, errors.New("runtime: sandboxes need Linux (namespaces, bubblewrap, cgroups)")
}
