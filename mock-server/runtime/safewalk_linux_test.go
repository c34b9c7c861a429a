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
