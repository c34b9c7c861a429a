package agent

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The container log stamps each line as `docker logs --timestamps` prints
// it, assembles lines per stream (a partial line of one stream never mixes
// with another's), cuts a line with no newline at 16 KiB as Docker's driver
// does, flushes a last partial line on Close, and stops at its limit with one
// line saying so.
func TestContainerLog(t *testing.T) {
	var buf bytes.Buffer
	l := newContainerLog(&buf, 1<<20)
	at := time.Date(2026, 12, 2, 8, 0, 0, 5, time.UTC)
	l.now = func() time.Time { return at }
	out, errs := l.Stream(), l.Stream()
	_, _ = out.Write([]byte("hel"))
	_, _ = errs.Write([]byte("oops\n"))
	_, _ = out.Write([]byte("lo\nwor"))
	_, _ = out.Write([]byte("ld\r\n\n"))
	_ = out.Close()
	assert.Equal(t, "2026-12-02T08:00:00.000000005Z oops\n"+
		"2026-12-02T08:00:00.000000005Z hello\n"+
		"2026-12-02T08:00:00.000000005Z world\r\n"+
		"2026-12-02T08:00:00.000000005Z \n", buf.String())

	buf.Reset()
	long := l.Stream()
	_, _ = long.Write(bytes.Repeat([]byte("a"), 40<<10))
	_ = long.Close()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	for i, want := range []int{16 << 10, 16 << 10, 8 << 10} {
		_, msg, _ := strings.Cut(lines[i], " ")
		assert.Len(t, msg, want)
	}

	buf.Reset()
	small := newContainerLog(&buf, 200)
	st := small.Stream()
	for i := range 50 {
		fmt.Fprintf(st, "line %d\n", i)
	}
	assert.LessOrEqual(t, buf.Len(), 200+120, "bounded: the limit, plus the one line saying so")
	assert.Contains(t, buf.String(), "[container log truncated: over 200 bytes; later output is dropped]\n")
	assert.NotContains(t, buf.String(), "line 49")
	assert.Regexp(t, regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z .*\n)+$`), buf.String())
}
