package egress

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGatewaySocketFitsUnderTheDefaultStateRoot: the bundled server's default
// state dir (/var/lib/osb-capstone/instances/<time>-<pid>-<rand>, 63 bytes)
// plus egress/<uuid>.sock was longer than a unix socket path may be, so every
// create with a networkPolicy failed with 500 "bind: invalid argument".
func TestGatewaySocketFitsUnderTheDefaultStateRoot(t *testing.T) {
	base, err := os.MkdirTemp("", "egl")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	dir := base
	for len(dir) < 63 { // as long as the default instance dir
		dir = filepath.Join(dir, strings.Repeat("d", min(20, 63-len(dir))))
	}
	require.NoError(t, os.MkdirAll(dir, 0o700))
	h, err := NewHub(HubConfig{StateDir: dir, Audit: &recorder{}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	a, err := h.Attach(uuid.NewString(), Policy{}, false)
	require.NoError(t, err, "a sandbox with a uuid id under a %d-byte state dir", len(dir))
	assert.LessOrEqual(t, len(a.SocketPath()), maxSocketPath)
	_, err = os.Stat(a.SocketPath())
	assert.NoError(t, err, "the gateway socket is bound")
}

// TestStateDirTooLongForSockets: a state dir whose sockets could not be bound
// fails the attach with the reason (not "bind: invalid argument").
func TestStateDirTooLongForSockets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("x", 100))
	require.NoError(t, os.MkdirAll(dir, 0o700))
	h, err := NewHub(HubConfig{StateDir: dir, Audit: &recorder{}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	_, err = h.Attach(uuid.NewString(), Policy{}, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "too long")
}
