package recompute

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/fixtures"
)

// The ≥ 50 MB file is read without holding it in memory: the live heap
// stays far below the file size while File runs.
func TestLargeFileStreams(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("large file (50 MiB) skipped in -short mode")
	}
	path, info, err := fixtures.GenerateLargeFile(t.TempDir())
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, fi.Size(), int64(50<<20))
	assert.Equal(t, info.Bytes, fi.Size())

	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	st, err := File(path)
	close(stop)
	<-done
	require.NoError(t, err)
	assert.EqualValues(t, info.Rows, st.Rows)
	assert.EqualValues(t, info.Bytes, st.Bytes)
	assert.EqualValues(t, 0, lookup(t, st, "missing_total"))
	assert.Len(t, st.GroupValues("region"), 4)
	assert.Len(t, st.GroupValues("order_date_month"), 6)
	total := 0.0
	for _, r := range st.GroupValues("region") {
		total += lookup(t, st, "sum_revenue_by_region_"+r)
	}
	assert.True(t, Equal(lookup(t, st, "sum_revenue"), total))
	t.Logf("file %d bytes, %d rows, peak heap in use %d bytes", st.Bytes, st.Rows, peak.Load())
	assert.Less(t, peak.Load(), uint64(fi.Size()/2), "heap must stay well below the file size")
}

func BenchmarkFileLarge(b *testing.B) {
	dir := b.TempDir()
	path, info, err := fixtures.GenerateLargeFile(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(info.Bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := File(path); err != nil {
			b.Fatal(err)
		}
	}
}
