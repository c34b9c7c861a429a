//go:build linux

package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestWalkFilesNeverFollowsSwappedLinks: while another goroutine keeps
// exchanging directories with links to a "host" directory and regular files
// with FIFOs, no walk reports a host file, opens a FIFO or blocks.
func TestWalkFilesNeverFollowsSwappedLinks(t *testing.T) {
	root, host := t.TempDir(), t.TempDir()
	for i := 0; i < 10; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(host, fmt.Sprintf("hostsecret-%d", i)), []byte("secret"), 0o600))
	}
	for i := 0; i < 8; i++ {
		d := filepath.Join(root, fmt.Sprintf("d%d", i))
		require.NoError(t, os.Mkdir(d, 0o755))
		for j := 0; j < 10; j++ {
			require.NoError(t, os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d", j)), []byte("x"), 0o644))
		}
		require.NoError(t, os.Symlink(host, filepath.Join(root, fmt.Sprintf("s%d", i))))
		require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", i)), []byte("y"), 0o644))
		require.NoError(t, unix.Mkfifo(filepath.Join(root, fmt.Sprintf("p%d", i)), 0o644))
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			for i := 0; i < 8; i++ {
				_ = unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, fmt.Sprintf("d%d", i)), unix.AT_FDCWD, filepath.Join(root, fmt.Sprintf("s%d", i)), unix.RENAME_EXCHANGE)
				_ = unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, fmt.Sprintf("f%d", i)), unix.AT_FDCWD, filepath.Join(root, fmt.Sprintf("p%d", i)), unix.RENAME_EXCHANGE)
			}
		}
	}()
	defer func() { stop.Store(true); <-done }()
	for a := 0; a < 200; a++ {
		start := time.Now()
		_, err := WalkFiles(root, 10000, time.Now().Add(5*time.Second), func(e WalkEntry) {
			require.NotContains(t, e.Rel, "hostsecret", "walk %d followed a link to the host directory", a)
			if e.File != nil {
				var st unix.Stat_t
				require.NoError(t, unix.Fstat(int(e.File.Fd()), &st))
				require.Equal(t, uint32(unix.S_IFREG), st.Mode&unix.S_IFMT, "walk %d opened a non-regular file %s", a, e.Rel)
				b := make([]byte, 16)
				n, _ := e.File.Read(b)
				require.False(t, strings.Contains(string(b[:n]), "secret"))
			}
		})
		require.NoError(t, err)
		require.Less(t, time.Since(start), 2*time.Second, "walk %d took too long", a)
	}
}

// TestWalkFilesBounds: entry and time budgets cut the walk and say so.
func TestWalkFilesBounds(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < 20; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", i)), nil, 0o644))
	}
	n := 0
	res, err := WalkFiles(root, 5, time.Time{}, func(WalkEntry) { n++ })
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, "entries", res.Cut)
	res, err = WalkFiles(root, 100, time.Now().Add(-time.Second), func(WalkEntry) {})
	require.NoError(t, err)
	require.Equal(t, "time", res.Cut)
	_, err = WalkFiles(filepath.Join(root, "f1"), 100, time.Time{}, func(WalkEntry) {})
	require.Error(t, err, "the root must be a directory")
}

// TestWalkOpenHeldDescriptor: a volume is walked from the O_PATH descriptor
// held since it was mounted: the directory the descriptor names even after its
// path is replaced by a link to another directory (no link is followed); a
// single-file volume is one entry with Rel ""; a closed descriptor is an
// error, never a walk of whatever reuses the number.
func TestWalkOpenHeldDescriptor(t *testing.T) {
	base, host := t.TempDir(), t.TempDir()
	vol := filepath.Join(base, "vol")
	require.NoError(t, os.MkdirAll(filepath.Join(vol, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(vol, "sub", "a.txt"), []byte("alpha"), 0o644))
	require.NoError(t, os.Symlink(host, filepath.Join(vol, "link")))
	require.NoError(t, os.WriteFile(filepath.Join(host, "hostsecret"), []byte("secret"), 0o600))
	fd, err := unix.Open(vol, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	held := os.NewFile(uintptr(fd), vol)
	defer held.Close()
	// the path now leads elsewhere; the descriptor still names the volume
	require.NoError(t, os.Rename(vol, filepath.Join(base, "moved")))
	require.NoError(t, os.Symlink(host, vol))

	walk := func(f *os.File) (map[string]string, error) {
		got := map[string]string{}
		_, err := WalkOpen(f, 100, time.Now().Add(5*time.Second), func(e WalkEntry) {
			content := ""
			if e.File != nil {
				b := make([]byte, 64)
				n, _ := e.File.Read(b)
				content = string(b[:n])
			}
			got[e.Rel] = content
		})
		return got, err
	}
	got, err := walk(held)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"sub/a.txt": "alpha", "link": ""}, got)

	file := filepath.Join(base, "single.txt")
	require.NoError(t, os.WriteFile(file, []byte("one file"), 0o644))
	ffd, err := unix.Open(file, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	single := os.NewFile(uintptr(ffd), file)
	got, err = walk(single)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"": "one file"}, got)

	require.NoError(t, single.Close())
	_, err = walk(single)
	require.Error(t, err)
}
