package runtime

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOnOwnFilesystem: what unmountDir takes for a mount point when umount
// answers EPERM (no CAP_SYS_ADMIN, as in an unprivileged container): a plain
// directory or a missing one is not one (destroy then succeeds); /proc is.
func TestOnOwnFilesystem(t *testing.T) {
	d := t.TempDir()
	assert.False(t, onOwnFilesystem(d), "a plain directory")
	assert.False(t, onOwnFilesystem(filepath.Join(d, "gone")), "a missing directory")
	assert.True(t, onOwnFilesystem("/proc"), "/proc is a mount point")
}
