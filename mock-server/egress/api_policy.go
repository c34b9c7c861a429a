package egress

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// AuthHeader is the egress API auth header (CONTRACT §3.1).
const AuthHeader = "OPENSANDBOX-EGRESS-AUTH"

// EnforcementMode is what GET /policy reports. The bundled gateway filters
// DNS and also refuses direct-IP traffic (the sandbox has no route out), which
// is the real sidecar's "dns+nft" behaviour.
const EnforcementMode = "dns+nft"

const maxBodyBytes = 1 << 20

var errBodyTooLarge = errors.New("request body exceeds the 1 MiB limit")

// newAPIHandler builds the :18080 handler. All errors are text/plain.
func (a *Attachment) newAPIHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/healthz":
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok"))
		case p == "/policy":
			if !a.authorized(r) {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			a.servePolicy(w, r)
		case p == "/credential-vault" || strings.HasPrefix(p, "/credential-vault/"):
			if !a.authorized(r) {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			a.serveVault(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

func (a *Attachment) authorized(r *http.Request) bool {
	got := r.Header.Get(AuthHeader)
	return got != "" && len(got) == len(a.token) && subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) == 1
}

func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	defer r.Body.Close()
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("failed to read body: %v", err)
	}
	if len(b) > maxBodyBytes {
		return nil, errBodyTooLarge
	}
	return b, nil
}

// sidecarJSON is how the egress sidecar writes JSON: as json.Encoder does, a
// newline after the value.
var sidecarJSON = wire.JSONReply{Newline: true}

func writeJSON(w http.ResponseWriter, status int, v any) { sidecarJSON.Write(w, status, v) }

func bodyError(w http.ResponseWriter, err error) {
	if errors.Is(err, errBodyTooLarge) {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, err.Error(), http.StatusBadRequest)
}

type policyStatus struct {
	Status          string  `json:"status"`
	Mode            string  `json:"mode"`
	EnforcementMode string  `json:"enforcementMode,omitempty"`
	Reason          string  `json:"reason,omitempty"`
	Policy          *Policy `json:"policy,omitempty"`
}

func (a *Attachment) servePolicy(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		p := a.Policy()
		writeJSON(w, http.StatusOK, policyStatus{Status: "ok", Mode: p.Mode(), EnforcementMode: EnforcementMode, Policy: &p})
	case http.MethodPost, http.MethodPut:
		body, err := readBody(r)
		if err != nil {
			bodyError(w, err)
			return
		}
		trimmed := bytes.TrimSpace(body)
		if len(trimmed) == 0 || string(trimmed) == "null" || isEmptyObject(trimmed) {
			a.setPolicy(r.Method, DenyAll())
			writeJSON(w, http.StatusOK, policyStatus{Status: "ok", Mode: ModeDenyAll, Reason: "policy reset to default deny-all"})
			return
		}
		p, err := ParsePolicy(trimmed)
		if err != nil {
			http.Error(w, "invalid policy: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(p.Egress) > a.hub.cfg.MaxRules {
			http.Error(w, fmt.Sprintf("policy has %d rules, more than the maximum %d", len(p.Egress), a.hub.cfg.MaxRules), http.StatusRequestEntityTooLarge)
			return
		}
		a.setPolicy(r.Method, p)
		writeJSON(w, http.StatusOK, policyStatus{Status: "ok", Mode: p.Mode(), EnforcementMode: EnforcementMode})
	case http.MethodPatch:
		body, err := readBody(r)
		if err != nil {
			bodyError(w, err)
			return
		}
		var rules []Rule
		if err := json.Unmarshal(body, &rules); err != nil {
			http.Error(w, "invalid patch body: want a JSON array of {action,target} rules: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(rules) == 0 {
			http.Error(w, "patch body must contain at least one rule", http.StatusBadRequest)
			return
		}
		seen := map[string]bool{}
		merged := make([]Rule, 0, len(rules))
		for i, rule := range rules {
			nr, err := rule.Normalize()
			if err != nil {
				http.Error(w, fmt.Sprintf("invalid rule [%d]: %v", i, err), http.StatusBadRequest)
				return
			}
			if seen[nr.Target] {
				continue // first entry for a target wins
			}
			seen[nr.Target] = true
			merged = append(merged, nr)
		}
		a.mu.Lock()
		cur := a.policy
		for _, old := range cur.Egress {
			if !seen[old.Target] {
				merged = append(merged, old)
			}
		}
		if len(merged) > a.hub.cfg.MaxRules {
			a.mu.Unlock()
			http.Error(w, fmt.Sprintf("policy would have %d rules, more than the maximum %d", len(merged), a.hub.cfg.MaxRules), http.StatusRequestEntityTooLarge)
			return
		}
		next := Policy{DefaultAction: cur.DefaultAction, Egress: merged}
		a.policy = next
		a.mu.Unlock()
		a.auditPolicy(r.Method, next)
		writeJSON(w, http.StatusOK, policyStatus{Status: "ok", Mode: next.Mode(), EnforcementMode: EnforcementMode})
	case http.MethodDelete:
		body, err := readBody(r)
		if err != nil {
			bodyError(w, err)
			return
		}
		var targets []string
		if err := json.Unmarshal(body, &targets); err != nil {
			http.Error(w, "invalid delete body: want a JSON array of targets: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(targets) == 0 {
			http.Error(w, "delete body must contain at least one target", http.StatusBadRequest)
			return
		}
		drop := map[string]bool{}
		for _, t := range targets {
			if nt, err := NormalizeTarget(t); err == nil {
				drop[nt] = true
			} else {
				drop[strings.ToLower(strings.TrimSpace(t))] = true
			}
		}
		a.mu.Lock()
		cur := a.policy
		kept := make([]Rule, 0, len(cur.Egress))
		for _, rule := range cur.Egress {
			if !drop[rule.Target] {
				kept = append(kept, rule)
			}
		}
		if len(kept) == len(cur.Egress) {
			a.mu.Unlock()
			writeJSON(w, http.StatusOK, policyStatus{Status: "ok", Mode: cur.Mode(), EnforcementMode: EnforcementMode, Reason: "no matching targets found"})
			return
		}
		next := Policy{DefaultAction: cur.DefaultAction, Egress: kept}
		a.policy = next
		a.mu.Unlock()
		a.auditPolicy(r.Method, next)
		writeJSON(w, http.StatusOK, policyStatus{Status: "ok", Mode: next.Mode(), EnforcementMode: EnforcementMode})
	default:
		w.Header().Set("Allow", "GET, POST, PUT, PATCH, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func isEmptyObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil && len(m) == 0
}

// SetPolicy replaces the enforced policy (as POST /policy does). It is for
// the server's own use; the sandbox-facing route is the :18080 API.
func (a *Attachment) SetPolicy(p Policy) error {
	np, err := p.Normalize()
	if err != nil {
		return err
	}
	a.setPolicy("SetPolicy", np)
	return nil
}

func (a *Attachment) setPolicy(how string, p Policy) {
	a.mu.Lock()
	a.policy = p
	a.mu.Unlock()
	a.auditPolicy(how, p)
}

// auditPolicy records a runtime policy change as an egress event with phase
// "policy", decision "update"; Reason holds the method and the new policy.
func (a *Attachment) auditPolicy(how string, p Policy) {
	js, _ := json.Marshal(p)
	if len(js) > 4096 {
		js = append(js[:4096], "…"...)
	}
	a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindEgress, Egress: &wire.Egress{
		Phase: "policy", Decision: "update", Rule: p.Mode(), Reason: how + " " + string(js),
	}})
}
