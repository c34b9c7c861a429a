package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Query selects events. Zero fields match everything.
type Query struct {
	SandboxID string
	Kind      wire.Kind
	Since     int64 // only events with Seq > Since
	// Key is an API-key fingerprint: the lifecycle calls made with that key
	// and every event of a sandbox a create with that key made (202). The
	// harness reads one subject run's share of a shared server with it
	// instead of the whole trail.
	Key string
}

// Match reports whether ev satisfies q's SandboxID, Kind and Since (Key
// needs the store's record of who created which sandbox: Store.Events).
func (q Query) Match(ev wire.Event) bool {
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
	events []wire.Event
	file   *os.File
	w      *bufio.Writer
	now    func() time.Time
	err    error // first write error, reported by Close

	// Indexes into events, so a query for one sandbox or one key reads its
	// own events, not the whole trail (a class graded on one server).
	bySandbox map[string][]int
	byKey     map[string][]int    // lifecycle calls made with a key
	created   map[string][]string // key → sandboxes created with it, in order
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
func (s *Store) Record(ev wire.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev.Seq = s.seq
	if ev.Time.IsZero() {
		ev.Time = s.now().UTC()
	}
	s.events = append(s.events, ev)
	s.index(len(s.events)-1, ev)
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

// index records ev (at i) in the per-sandbox and per-key indexes.
func (s *Store) index(i int, ev wire.Event) {
	if s.bySandbox == nil {
		s.bySandbox, s.byKey, s.created = map[string][]int{}, map[string][]int{}, map[string][]string{}
	}
	if ev.SandboxID != "" {
		s.bySandbox[ev.SandboxID] = append(s.bySandbox[ev.SandboxID], i)
	}
	lc := ev.Lifecycle
	if ev.Kind != wire.KindLifecycle || lc == nil || lc.KeyFingerprint == "" {
		return
	}
	s.byKey[lc.KeyFingerprint] = append(s.byKey[lc.KeyFingerprint], i)
	if IsCreate(ev) && !contains(s.created[lc.KeyFingerprint], ev.SandboxID) {
		s.created[lc.KeyFingerprint] = append(s.created[lc.KeyFingerprint], ev.SandboxID)
	}
}

// IsCreate reports whether ev is a create request that made a sandbox:
// POST /v1/sandboxes (or /sandboxes) answered 202 with the sandbox's id.
func IsCreate(ev wire.Event) bool {
	lc := ev.Lifecycle
	if ev.Kind != wire.KindLifecycle || lc == nil || lc.Method != http.MethodPost || lc.Status != http.StatusAccepted || ev.SandboxID == "" {
		return false
	}
	p := strings.TrimSuffix(strings.SplitN(lc.Path, "?", 2)[0], "/")
	return p == "/v1/sandboxes" || p == "/sandboxes"
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Events returns a copy of the events matching q, in Seq order.
func (s *Store) Events(q Query) []wire.Event {
	out, _ := s.EventsAndLastSeq(q)
	return out
}

// EventsAndLastSeq is Events and LastSeq read at the same instant: polling
// with Since set to that Seq neither skips nor repeats an event.
func (s *Store) EventsAndLastSeq(q Query) ([]wire.Event, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.matching(q), s.seq
}

func (s *Store) matching(q Query) []wire.Event {
	out := make([]wire.Event, 0)
	add := func(i int) {
		if ev := s.events[i]; q.Match(ev) {
			out = append(out, ev)
		}
	}
	switch {
	case q.Key != "":
		idx := append([]int(nil), s.byKey[q.Key]...)
		for _, id := range s.created[q.Key] {
			if q.SandboxID == "" || q.SandboxID == id {
				idx = append(idx, s.bySandbox[id]...)
			}
		}
		sort.Ints(idx)
		for n, i := range idx {
			if n == 0 || i != idx[n-1] {
				add(i)
			}
		}
	case q.SandboxID != "":
		for _, i := range s.bySandbox[q.SandboxID] {
			add(i)
		}
	default:
		// Seq grows with the slice: skip what precedes the cursor.
		start := sort.Search(len(s.events), func(i int) bool { return s.events[i].Seq > q.Since })
		for i := start; i < len(s.events); i++ {
			add(i)
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
