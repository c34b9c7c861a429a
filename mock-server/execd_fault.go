package mockserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// The execd fault is a documented mock extension for milestone M1's "a run
// that fails midway still cleans up": the harness asks that the Nth execd
// operation (a command, an upload, a download or a file operation; /ping and
// other reads do not count) on a sandbox created with one API key answers an
// error, as a platform fault would, and then checks that the subject still
// destroyed its sandbox. Keyed by the API key's fingerprint, so concurrent
// runs with other keys are untouched.
//
//	POST   /_mock/faults/execd {"key_fingerprint":"…","call":2,"status":500}  204
//	DELETE /_mock/faults/execd?key_fingerprint=…                              204

// execdFaultRule is one armed fault.
type execdFaultRule struct {
	KeyFingerprint string `json:"key_fingerprint"`
	Call           int    `json:"call"`   // the Nth operation (1-based) per sandbox
	Status         int    `json:"status"` // 5xx
}

// execdFault is the armed execd faults and the operation counts per
// sandbox: a keyed execd fault (keyed_fault.go), registered in adminRoutes.
type execdFault struct {
	mu    sync.Mutex
	rules map[string]execdFaultRule // by key fingerprint
	count map[string]int            // operations seen per sandbox while a rule applies
}

// Name is the fault's name in the audit.
func (f *execdFault) Name() string { return "execd-fault" }

// Arm reads {"key_fingerprint":"…","call":N,"status":5xx}.
func (f *execdFault) Arm(body []byte) (string, string, error) {
	var rule execdFaultRule
	if err := json.Unmarshal(body, &rule); err != nil ||
		strings.TrimSpace(rule.KeyFingerprint) == "" || rule.Call < 1 || rule.Status < 500 || rule.Status > 599 {
		return "", "", fmt.Errorf(`body must be {"key_fingerprint":"<12 hex>","call":N (≥ 1),"status":5xx}`)
	}
	f.mu.Lock()
	if f.rules == nil {
		f.rules = map[string]execdFaultRule{}
	}
	f.rules[rule.KeyFingerprint] = rule
	f.mu.Unlock()
	return rule.KeyFingerprint, fmt.Sprintf("operation %d answers %d", rule.Call, rule.Status), nil
}

// Clear disarms the fault of one key ("" every key).
func (f *execdFault) Clear(fp string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fp == "" {
		f.rules = nil
	} else {
		delete(f.rules, fp)
	}
}

// isExecdOperation says whether a request counts for the execd fault.
func isExecdOperation(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && (p == "/command" || p == "/code"):
		return true
	case strings.HasPrefix(p, "/files") || strings.HasPrefix(p, "/directories"):
		return r.Method != http.MethodGet || p == "/files/download"
	}
	return false
}

// Inject answers the request with the armed fault's status when it
// is the faulted operation of a sandbox created by a faulted key, and says so.
// The sandbox's creator is the key it was created with (sandbox.keyFP), never
// looked up in the audit: the fault hits exactly the Nth operation. The
// request body is read first (bounded), so a client that sends its whole
// upload before it reads (Python's) gets the status, not a connection reset.
func (f *execdFault) Inject(s *Server, w http.ResponseWriter, r *http.Request, sb *sandbox) bool {
	f.mu.Lock()
	if len(f.rules) == 0 || !isExecdOperation(r) || sb.keyFP == "" {
		f.mu.Unlock()
		return false
	}
	rule, ok := f.rules[sb.keyFP]
	if !ok {
		f.mu.Unlock()
		return false
	}
	if f.count == nil {
		f.count = map[string]int{}
	}
	f.count[sb.id]++
	n := f.count[sb.id]
	f.mu.Unlock()
	if n != rule.Call {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxFaultDrain))
	s.audit.Record(wire.Event{SandboxID: sb.id, Kind: wire.KindFault, Fault: &wire.Fault{Name: "execd-fault", Active: true,
		Detail: fmt.Sprintf("operation %d (%s %s) answered %d", n, r.Method, r.URL.Path, rule.Status)}})
	writeError(w, rule.Status, "MOCK::INJECTED_FAULT", "Simulated platform fault injected by the harness (execd operation "+fmt.Sprint(n)+").")
	return true
}

// maxFaultDrain bounds the request body read before the execd fault answers.
const maxFaultDrain = 1 << 30
