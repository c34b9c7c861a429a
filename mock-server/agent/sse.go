package agent

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// event is one execd stream event (ex/web/model/codeinterpreting.go); empty
// and zero fields are omitted, timestamp (Unix ms) is always set.
type event struct {
	Type           string `json:"type"`
	Text           string `json:"text,omitempty"`
	ExecutionCount int    `json:"execution_count,omitempty"`
	ExecutionTime  int64  `json:"execution_time,omitempty"`
	Timestamp      int64  `json:"timestamp"`
	// Results is a code context's result, keyed by MIME type with
	// text/plain named "text" (as execd renames it).
	Results map[string]any `json:"results,omitempty"`
	Error   *evError       `json:"error,omitempty"`
}

type evError struct {
	Ename     string   `json:"ename"`
	Evalue    string   `json:"evalue"`
	Traceback []string `json:"traceback"`
}

// sseStream writes bare-JSON frames ("{...}\n\n", no "data:" prefix), flushing
// each. After the client goes away writes are dropped; the command goes on.
type sseStream struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	rc   *http.ResponseController
	dead bool
}

func newSSE(w http.ResponseWriter) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseStream{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

func (s *sseStream) send(ev event) {
	s.queue(ev)
	s.flush()
}

// queue writes one frame without flushing it (output lines read in one chunk
// go out together at the chunk's flush: the same frames, fewer syscalls).
func (s *sseStream) queue(ev event) {
	ev.Timestamp = time.Now().UnixMilli()
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	b = append(b, '\n', '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.dead = true
	}
}

// flush pushes queued frames to the client.
func (s *sseStream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return
	}
	if err := s.rc.Flush(); err != nil {
		s.dead = true
	}
}

// raw writes b as it is and flushes: what gin writes when a handler answers
// an error as JSON after the stream has begun (execd's busy kernel).
func (s *sseStream) raw(b string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return
	}
	if _, err := s.w.Write([]byte(b)); err != nil {
		s.dead = true
		return
	}
	_ = s.rc.Flush()
}
