package mockserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// A keyed execd fault is a documented mock extension the harness arms for
// one API key before a subject runs and clears after: it acts on the execd
// operations of the sandboxes that key created (sandbox.keyFP), so two
// submissions graded at once never see each other's faults. One line in
// adminRoutes registers it (routeMux.keyedExecdFault): its POST and DELETE
// routes under /_mock/faults/<name>, with their usage lines, and its hook on
// every execd operation. A new fault of that kind is its own file (the
// keyedFault implementation) and that line; the route lists of doc.go and
// README.md are generated from adminRoutes.
//
//	POST   /_mock/faults/<name> {"key_fingerprint":"…", <its parameters>}  204 (400 on a bad body)
//	DELETE /_mock/faults/<name>?key_fingerprint=…                          204

// keyedFault is what a keyed execd fault implements.
type keyedFault interface {
	// Name is the fault's name in the audit (wire.Fault.Name).
	Name() string
	// Arm reads the POST body: the fault's parameters for one key (the
	// body's key_fingerprint, never empty). An error is the client's (400,
	// its message says what the body must be); detail is audited.
	Arm(body []byte) (keyFP string, detail string, err error)
	// Clear disarms the fault of one key ("" every key).
	Clear(keyFP string)
	// Inject answers r if the fault applies to this operation of sb (a
	// sandbox its key created), records what it did in the audit, and says
	// whether it answered.
	Inject(s *Server, w http.ResponseWriter, r *http.Request, sb *sandbox) bool
}

// keyedFaults are the keyed execd faults registered with the admin routes,
// consulted on every execd operation.
type keyedFaults struct {
	mu     sync.Mutex
	faults []keyedFault
}

func (k *keyedFaults) add(f keyedFault) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.faults = append(k.faults, f)
}

// inject lets each registered fault answer r in turn; true once one did.
func (k *keyedFaults) inject(s *Server, w http.ResponseWriter, r *http.Request, sb *sandbox) bool {
	if sb.keyFP == "" {
		return false
	}
	k.mu.Lock()
	faults := append([]keyedFault(nil), k.faults...)
	k.mu.Unlock()
	for _, f := range faults {
		if f.Inject(s, w, r, sb) {
			return true
		}
	}
	return false
}

// keyedExecdFault registers the fault f at /_mock/faults/<route>: POST arms
// it for a key (usage: its body and answer), DELETE clears it, and its hook
// sees every execd operation of the server.
func (m *routeMux) keyedExecdFault(s *Server, route, usage string, f keyedFault) {
	name := f.Name()
	s.keyedFaults.add(f)
	handler := func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			fp := r.URL.Query().Get("key_fingerprint")
			f.Clear(fp)
			s.audit.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: name, Active: false, Detail: "key " + fp}})
			w.WriteHeader(http.StatusNoContent)
			return
		}
		body, err := readAdminBody(w, r)
		if err != nil {
			writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", err.Error())
			return
		}
		fp, detail, err := f.Arm(body)
		if err == nil && strings.TrimSpace(fp) == "" {
			err = fmt.Errorf(`the body needs "key_fingerprint"`)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", err.Error())
			return
		}
		s.audit.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: name, Active: true, Detail: "key " + fp + ": " + detail}})
		w.WriteHeader(http.StatusNoContent)
	}
	m.route("POST /_mock/faults/"+route, usage, handler)
	m.route("DELETE /_mock/faults/"+route, "?key_fingerprint=…  204: clears it (every key without one)", handler)
}

// readAdminBody reads a bounded JSON object body.
func readAdminBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	var raw json.RawMessage
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("the body must be a JSON object: %v", err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("the body must be a JSON object")
	}
	return raw, nil
}
