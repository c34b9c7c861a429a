package secretscan

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScanFileChunks: a secret across the scanner's chunk boundary is found.
func TestScanFileChunks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	secret := "sk-0123456789abcdef0123456789"
	b := bytes.Repeat([]byte("x"), 1<<20-10)
	b = append(b, secret...)
	b = append(b, bytes.Repeat([]byte("y"), 100)...)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	found, err := ScanFile(p, map[string]string{"key": secret, "other": "never-there-123"})
	require.NoError(t, err)
	assert.Equal(t, []string{"key"}, found)
}
