package mockserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/osb-capstone/acceptance/mock-server/audit"
)

// The capacity fault is a documented mock extension for drill D3: the course
// expects "429 with Retry-After" from a Kubernetes pool at capacity, which
// OpenSandbox 1.1.1 never sends (CONTRACT §9: an exhausted pool gives 504).
// While it is on, every create answers 429 SANDBOX::CAPACITY_EXHAUSTED with a
// Retry-After header, so a subject's back-off can be measured.

// capacityFault is the active fault (nil: off).
type capacityFault struct {
	RetryAfterSeconds int `json:"retry_after_seconds"`
}

// maxRetryAfter bounds the simulated Retry-After.
const maxRetryAfter = 300

// adminCapacity switches the capacity fault on (POST, body
// {"retry_after_seconds": N}, 1..300) or off (DELETE).
func (s *Server) adminCapacity(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		s.mu.Lock()
		s.capacity = nil
		s.mu.Unlock()
		s.audit.Record(audit.Event{Kind: audit.KindFault, Fault: &audit.Fault{Name: "capacity-429", Active: false}})
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var body capacityFault
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil ||
		body.RetryAfterSeconds < 1 || body.RetryAfterSeconds > maxRetryAfter {
		writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER",
			fmt.Sprintf(`body must be {"retry_after_seconds": N} with N from 1 to %d`, maxRetryAfter))
		return
	}
	s.mu.Lock()
	s.capacity = &body
	s.mu.Unlock()
	s.audit.Record(audit.Event{Kind: audit.KindFault, Fault: &audit.Fault{Name: "capacity-429", Active: true,
		Detail: fmt.Sprintf("every create answers 429 with Retry-After: %d (simulated; OpenSandbox 1.1.1 never sends 429)", body.RetryAfterSeconds)}})
	w.WriteHeader(http.StatusNoContent)
}

// refuseForCapacity answers a create with 429 while the capacity fault is on.
func (s *Server) refuseForCapacity(w http.ResponseWriter) bool {
	s.mu.Lock()
	f := s.capacity
	s.mu.Unlock()
	if f == nil {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfterSeconds))
	writeError(w, http.StatusTooManyRequests, "SANDBOX::CAPACITY_EXHAUSTED",
		fmt.Sprintf("No sandbox capacity is available; retry after %d seconds. (Simulated by the bundled server for drill D3.)", f.RetryAfterSeconds))
	return true
}
