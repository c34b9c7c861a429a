package mockserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// The capacity fault is a documented mock extension for drill D3: the course
// expects "429 with Retry-After" from a Kubernetes pool at capacity, which
// OpenSandbox 1.1.1 sends only on Kubernetes (services/k8s/kubernetes_service.py:
// a poolRef create that finds no capacity before the acquisition timeout) and
// never on Docker, whose runtime this server plays. While it is on, every
// create answers that 429 (KUBERNETES::POOL_CAPACITY_EXHAUSTED, Retry-After),
// so a subject's back-off can be measured.

// capacityFault is one active rule: every create (KeyFingerprint empty), or
// the creates made with one API key (its fingerprint), so one subject's
// drill does not refuse the creates of others graded on the same server.
type capacityFault struct {
	RetryAfterSeconds int    `json:"retry_after_seconds"`
	KeyFingerprint    string `json:"key_fingerprint,omitempty"`
}

// maxRetryAfter bounds the simulated Retry-After.
const maxRetryAfter = 300

// adminCapacity switches the capacity fault on (POST, body
// {"retry_after_seconds": N[, "key_fingerprint": FP]}, N 1..300) or off
// (DELETE[?key_fingerprint=FP]: that key's rule, or the every-create rule).
func (s *Server) adminCapacity(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		fp := r.URL.Query().Get("key_fingerprint")
		s.mu.Lock()
		delete(s.capacity, fp)
		s.mu.Unlock()
		detail := ""
		if fp != "" {
			detail = "key " + fp
		}
		s.audit.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "capacity-429", Active: false, Detail: detail}})
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var body capacityFault
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil ||
		body.RetryAfterSeconds < 1 || body.RetryAfterSeconds > maxRetryAfter || body.KeyFingerprint != strings.TrimSpace(body.KeyFingerprint) {
		writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER",
			fmt.Sprintf(`body must be {"retry_after_seconds": N} with N from 1 to %d, and optionally "key_fingerprint": the fingerprint of the API key whose creates are refused`, maxRetryAfter))
		return
	}
	s.mu.Lock()
	if s.capacity == nil {
		s.capacity = map[string]*capacityFault{}
	}
	s.capacity[body.KeyFingerprint] = &body
	s.mu.Unlock()
	who := "every create"
	if body.KeyFingerprint != "" {
		who = "every create with key " + body.KeyFingerprint
	}
	s.audit.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "capacity-429", Active: true,
		Detail: fmt.Sprintf("%s answers 429 with Retry-After: %d (simulated: OpenSandbox 1.1.1 sends it only from a Kubernetes pool)", who, body.RetryAfterSeconds)}})
	w.WriteHeader(http.StatusNoContent)
}

// refuseForCapacity answers a create with 429 while a capacity fault covers
// it (its key's rule, else the every-create rule).
func (s *Server) refuseForCapacity(w http.ResponseWriter, r *http.Request) bool {
	fp := ""
	if k := r.Header.Get(headerAPIKey); k != "" {
		fp = Fingerprint(k)
	}
	s.mu.Lock()
	f := s.capacity[fp]
	if f == nil || fp == "" {
		f = s.capacity[""]
	}
	s.mu.Unlock()
	if f == nil {
		return false
	}
	// 1.1.1's Kubernetes pool answer (_pool_capacity_exhausted_error), as
	// the recording proxy injects it on a real target.
	wire.WriteCapacityExhausted(w, f.RetryAfterSeconds)
	return true
}
