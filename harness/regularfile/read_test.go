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

// TestReadNeverFollowsASymlink: a submission's summary.json linked to a file
// it may not read is refused, and the error never names the target.
func TestReadNeverFollowsASymlink(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "shadow-target")
	require.NoError(t, os.WriteFile(secret, []byte("root:secret-hash:1:"), 0o600))
	link := filepath.Join(dir, "summary.json")
	require.NoError(t, os.Symlink(secret, link))
	for _, read := range []func(string, int64) ([]byte, error){Read, ReadMax} {
		b, err := read(link, 1<<20)
		require.Error(t, err)
		assert.True(t, errors.Is(err, ErrSymlink), "%v", err)
		assert.Empty(t, b)
		assert.NotContains(t, err.Error(), "shadow-target")
	}
}

// TestReadMaxRefusesASparseTebibyte: a 1 TiB sparse file (what once made the
// grader run out of memory) is refused from its size, at once, naming the cap.
func TestReadMaxRefusesASparseTebibyte(t *testing.T) {
	p := filepath.Join(t.TempDir(), "report.md")
	f, err := os.Create(p)
	require.NoError(t, err)
	if err := f.Truncate(1 << 40); err != nil {
		f.Close()
		t.Skipf("this filesystem cannot hold a 1 TiB sparse file: %v", err)
	}
	require.NoError(t, f.Close())
	start := time.Now()
	b, err := ReadMax(p, 8<<20)
	var tl *TooLargeError
	require.True(t, errors.As(err, &tl), "%v", err)
	assert.Equal(t, int64(1<<40), tl.Size)
	assert.Equal(t, int64(8<<20), tl.Limit)
	assert.Contains(t, err.Error(), "over the grader's cap of 8388608 bytes")
	assert.Nil(t, b)
	assert.Less(t, time.Since(start), 5*time.Second)

	small := filepath.Join(t.TempDir(), "ok")
	require.NoError(t, os.WriteFile(small, []byte("12345"), 0o644))
	b, err = ReadMax(small, 5)
	require.NoError(t, err)
	assert.Equal(t, "12345", string(b))
	_, err = ReadMax(small, 4)
	require.True(t, errors.As(err, &tl), "%v", err)
}
