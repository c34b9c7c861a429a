package mockserver

import (
	"strconv"
	"testing"
)

// TestOutputLogKeepsNewest: once full, the log keeps the newest entries
// within its byte limit, oldest dropped first.
func TestOutputLogKeepsNewest(t *testing.T) {
	o := newOutputLog(100)
	for i := 0; i < 1000; i++ {
		o.Add("c", "stdout", "line-"+strconv.Itoa(i)) // 8 bytes from i=100 on
	}
	es := o.Entries()
	if len(es) == 0 || es[len(es)-1].Text != "line-999" {
		t.Fatalf("newest entry missing: %+v", es)
	}
	size := 0
	for i, e := range es {
		size += len(e.Text)
		if i > 0 && e.Text <= es[i-1].Text {
			t.Fatalf("out of order at %d: %q after %q", i, e.Text, es[i-1].Text)
		}
	}
	if size > 100 || size < 90 {
		t.Fatalf("kept %d bytes in %d entries, want close to the 100-byte limit", size, len(es))
	}
}

// TestOutputLogDropIsAmortized: adding to a full log must not copy the whole
// log each time (the output soak found that it did). It counts the entries
// moved by compaction: at most a small multiple of the entries added.
func TestOutputLogDropIsAmortized(t *testing.T) {
	o := newOutputLog(1 << 20)
	const n = 400000
	for i := 0; i < n; i++ {
		o.Add("c", "stdout", "0123456789abcdef")
	}
	if o.moved > 2*n {
		t.Fatalf("%d entries moved for %d adds: dropping is not amortized O(1)", o.moved, n)
	}
}

// BenchmarkOutputLogAddFull: one Add to a full 4 MiB log.
func BenchmarkOutputLogAddFull(b *testing.B) {
	o := newOutputLog(outputLogLimit)
	for i := 0; i < outputLogLimit/16+1000; i++ {
		o.Add("c", "stdout", "0123456789abcdef")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o.Add("c", "stdout", "0123456789abcdef")
	}
}
