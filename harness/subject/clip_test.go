package subject

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadClipped(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.log")
	require.NoError(t, os.WriteFile(p, []byte("short"), 0o644))
	s, tr, err := ReadClipped(p, 100)
	require.NoError(t, err)
	assert.Equal(t, "short", s)
	assert.False(t, tr)

	require.NoError(t, os.WriteFile(p, []byte(strings.Repeat("a", 500)+strings.Repeat("b", 500)), 0o644))
	s, tr, err = ReadClipped(p, 100)
	require.NoError(t, err)
	assert.True(t, tr)
	assert.Equal(t, strings.Repeat("a", 50)+ClipMarker+strings.Repeat("b", 50), s)

	_, _, err = ReadClipped(filepath.Join(t.TempDir(), "none"), 10)
	assert.Error(t, err)
}
