package regularfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadRegularBounded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(p, []byte("0123456789"), 0o644))

	b, err := Read(p, 100)
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(b))

	b, err = Read(p, 4)
	require.NoError(t, err)
	assert.Equal(t, "01234", string(b), "one byte past the limit shows the file is over it")

	_, err = Read(filepath.Join(dir, "missing"), 10)
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
}

func TestReadRefusesNonRegularWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))

	done := make(chan error, 1)
	go func() { _, err := Read(fifo, 10); done <- err }()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("Read blocked on a FIFO with no writer")
	}

	_, err := Read(dir, 10)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a regular file")
}
