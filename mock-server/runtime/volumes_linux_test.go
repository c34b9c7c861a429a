//go:build linux

package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestOpenBeneathConfines: a subPath resolves beneath its volume whatever
// the volume holds — "..", absolute paths and links out of it are refused
// (and mkdirs creates nothing outside), links inside it work, missing
// directories are created, and only directories and regular files open.
func TestOpenBeneathConfines(t *testing.T) {
	base := t.TempDir()
	vol, outside := filepath.Join(base, "vol"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(vol, "data", "train"), outside} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(vol, "data", "train", "m.txt"), []byte("m"), 0o644))
	require.NoError(t, os.Symlink("/", filepath.Join(vol, "abs")))
	require.NoError(t, os.Symlink("../outside", filepath.Join(vol, "rel")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "made"), filepath.Join(vol, "dangling")))
	require.NoError(t, os.Symlink("data/train", filepath.Join(vol, "current")))
	require.NoError(t, unix.Mkfifo(filepath.Join(vol, "fifo"), 0o644))

	for _, sub := range []string{"../outside", "data/../../outside", "/etc", "abs", "abs/etc", "rel", "rel/x",
		"dangling", "dangling/deeper", "data/../abs"} {
		f, err := OpenBeneath(vol, sub, true)
		if err == nil {
			f.Close()
			t.Errorf("%q opened (%s): want an escape error", sub, f.Name())
			continue
		}
		assert.True(t, errors.Is(err, ErrEscapes), "%q: %v", sub, err)
	}
	_, err := os.Lstat(filepath.Join(outside, "made"))
	assert.True(t, os.IsNotExist(err), "mkdirs created a directory outside the volume through a dangling link")

	// inside: the volume itself, a directory, a link that stays inside, a file
	for sub, want := range map[string]string{"": vol, "data/train": filepath.Join(vol, "data", "train"),
		"current": filepath.Join(vol, "data", "train"), "./data//train/": filepath.Join(vol, "data", "train"),
		"data/train/m.txt": filepath.Join(vol, "data", "train", "m.txt")} {
		f, err := OpenBeneath(vol, sub, false)
		require.NoError(t, err, "%q", sub)
		got, err := os.Readlink(filepath.Join("/proc/self/fd", strconv.Itoa(int(f.Fd()))))
		require.NoError(t, err)
		assert.Equal(t, want, got, "%q", sub)
		f.Close()
	}
	// missing directories are created beneath (mkdirs), and only with it
	_, err = OpenBeneath(vol, "new/a/b", false)
	assert.True(t, errors.Is(err, unix.ENOENT), "%v", err)
	f, err := OpenBeneath(vol, "new/a/b", true)
	require.NoError(t, err)
	f.Close()
	info, err := os.Stat(filepath.Join(vol, "new", "a", "b"))
	require.NoError(t, err)
	assert.True(t, info.IsDir())
	// a FIFO never opens (nor blocks)
	_, err = OpenBeneath(vol, "fifo", false)
	assert.True(t, errors.Is(err, ErrNotMountable), "%v", err)

}
