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
// bytes (oldest entries are dropped first).
type outputLog struct {
	mu      sync.Mutex
	limit   int
	size    int
	entries []outputEntry
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
	drop := 0
	for o.size > o.limit && drop < len(o.entries) {
		o.size -= len(o.entries[drop].Text)
		drop++
	}
	if drop > 0 {
		o.entries = append([]outputEntry(nil), o.entries[drop:]...)
	}
}

func (o *outputLog) Entries() []outputEntry {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]outputEntry(nil), o.entries...)
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
