package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Query selects events. Zero fields match everything.
type Query struct {
	SandboxID string
	Kind      Kind
	Since     int64 // only events with Seq > Since
}

// Match reports whether ev satisfies q.
func (q Query) Match(ev Event) bool {
	if q.SandboxID != "" && ev.SandboxID != q.SandboxID {
		return false
	}
	if q.Kind != "" && ev.Kind != q.Kind {
		return false
	}
	return ev.Seq > q.Since
}

// Store is the concurrency-safe, append-only audit trail. It keeps every event
// in memory (for queries) and, when given a path, appends each one as a JSON
// line to that file as it is recorded.
type Store struct {
	mu     sync.Mutex
	seq    int64
	events []Event
	file   *os.File
	w      *bufio.Writer
	now    func() time.Time
	err    error // first write error, reported by Close
}

// NewStore creates a store. path may be empty (memory only); otherwise the
// file is created (or appended to) with mode 0600 and its directory created.
// now may be nil (time.Now).
func NewStore(path string, now func() time.Time) (*Store, error) {
	if now == nil {
		now = time.Now
	}
	s := &Store{now: now}
	if path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("audit: create dir: %w", err)
		}
		s.seq = lastSeq(path)
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("audit: open %s: %w", path, err)
		}
		s.file = f
		s.w = bufio.NewWriter(f)
	}
	return s, nil
}

// Record assigns Seq and Time (when zero) and appends ev.
func (s *Store) Record(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev.Seq = s.seq
	if ev.Time.IsZero() {
		ev.Time = s.now().UTC()
	}
	s.events = append(s.events, ev)
	if s.w != nil {
		line, err := json.Marshal(ev)
		if err == nil {
			line = append(line, '\n')
			if _, err = s.w.Write(line); err == nil {
				err = s.w.Flush()
			}
		}
		if err != nil && s.err == nil {
			s.err = err
		}
	}
}

// Events returns a copy of the events matching q, in Seq order.
func (s *Store) Events(q Query) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Event, 0)
	for _, ev := range s.events {
		if q.Match(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// LastSeq is the Seq of the newest event (0 when empty).
func (s *Store) LastSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// Close flushes and closes the JSONL file. Events can still be recorded in
// memory afterwards. It returns the first write error seen, if any.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return s.err
	}
	err := s.w.Flush()
	if cerr := s.file.Close(); err == nil {
		err = cerr
	}
	s.file, s.w = nil, nil
	if s.err != nil {
		return s.err
	}
	return err
}

var _ Recorder = (*Store)(nil)

// lastSeq is the highest Seq already in an existing JSONL file, so a server
// restarted on the same state dir keeps Seq strictly increasing in the file.
func lastSeq(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var max int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev struct {
			Seq int64 `json:"seq"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Seq > max {
			max = ev.Seq
		}
	}
	return max
}
