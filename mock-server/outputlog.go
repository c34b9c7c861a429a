package mockserver

import (
	"strings"
	"sync"
)

// outputLogLimit bounds the per-sandbox copy of command output kept for
// canary scans and deprecated diagnostics logs.
const outputLogLimit = 4 << 20

type outputEntry struct {
	CommandID string
	Stream    string // stdout | stderr
	Text      string
}

// outputLog keeps the most recent command output of one sandbox, bounded in
// bytes (oldest entries are dropped first). Dropping advances a head index
// and the slice is compacted only when the dead prefix is as long as the
// live part, so an Add to a full log is amortized O(1).
type outputLog struct {
	mu      sync.Mutex
	limit   int
	size    int
	head    int // entries[:head] are dropped
	entries []outputEntry
	moved   int // entries copied by compaction (tests)
}

func newOutputLog(limit int) *outputLog { return &outputLog{limit: limit} }

func (o *outputLog) Add(cmdID, stream, text string) {
	if o == nil || text == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(text) > o.limit {
		text = text[len(text)-o.limit:]
	}
	o.entries = append(o.entries, outputEntry{CommandID: cmdID, Stream: stream, Text: text})
	o.size += len(text)
	for o.size > o.limit && o.head < len(o.entries) {
		o.size -= len(o.entries[o.head].Text)
		o.entries[o.head] = outputEntry{}
		o.head++
	}
	if live := len(o.entries) - o.head; o.head > 0 && o.head >= live {
		n := copy(o.entries, o.entries[o.head:])
		o.moved += n
		clear(o.entries[n:])
		o.entries = o.entries[:n]
		o.head = 0
	}
}

func (o *outputLog) Entries() []outputEntry {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]outputEntry(nil), o.entries[o.head:]...)
}

func (o *outputLog) String() string {
	var b strings.Builder
	for _, e := range o.Entries() {
		b.WriteString(e.Text)
		if !strings.HasSuffix(e.Text, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
