// Package vaultcheck is the vault check on a real target (docker), where no gateway records
// whether the vault injected a credential into a request: a call that
// reached the data API with this submission's real token (identity: the
// token, one per submission) came through the vault only if one of the
// run's sandboxes (identity: the sandboxes its recording proxy saw it
// create) had that token in its Credential Vault, bound to the data API's
// host, and was created with credentialProxy on. Both are read from what the
// recording proxy saw: the create requests, and the vault writes sent
// through the sandboxes' rewritten 18080 endpoints, whose secret values it
// keeps as fingerprints only (observe.redactVault).
//
// Holders is that check: the data API call came through the vault only if
// one of the sandboxes it names exists.
package vaultcheck

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/osb"
)

// Holders are the sandboxes of calls whose vault held the token with
// fingerprint tokenFP in a binding for host, created with credentialProxy
// on, in the order they were created.
func Holders(calls []command.Call, tokenFP, host string) []string {
	proxied := map[string]bool{}
	var order []string
	held := map[string]bool{}
	for _, c := range calls {
		if c.Status < 200 || c.Status >= 300 || c.SandboxID == "" {
			continue
		}
		if c.Kind == command.KindLifecycle && c.Method == http.MethodPost && command.IsCreatePath(c.Path) {
			var req struct {
				CredentialProxy *osb.CredentialProxy `json:"credentialProxy"`
			}
			if json.Unmarshal(c.Body, &req) == nil && req.CredentialProxy != nil && req.CredentialProxy.Enabled {
				proxied[c.SandboxID] = true
				order = append(order, c.SandboxID)
			}
			continue
		}
		if c.Kind == command.KindEndpoint && isVaultWritePath(c.Path) && vaultBindsToken(c.Body, tokenFP, host) {
			held[c.SandboxID] = true
		}
	}
	var out []string
	for _, id := range order {
		if held[id] && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// isVaultWritePath: a recorded endpoint call's path is the sidecar's
// /credential-vault (through /sandboxes/{id}/proxy/18080/… or directly).
func isVaultWritePath(p string) bool {
	p = strings.TrimSuffix(strings.SplitN(p, "?", 2)[0], "/")
	return strings.HasSuffix(p, "/credential-vault")
}

// vaultBindsToken says whether a vault write (create or patch, its values
// fingerprinted) holds a credential with the token's fingerprint and binds
// it to host.
func vaultBindsToken(body json.RawMessage, tokenFP, host string) bool {
	var v any
	if tokenFP == "" || json.Unmarshal(body, &v) != nil {
		return false
	}
	creds := map[string]bool{} // names of credentials holding the token
	var bindings []map[string]any
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case map[string]any:
			if src, ok := t["source"].(map[string]any); ok {
				if name, _ := t["name"].(string); name != "" && src["value"] == "fingerprint:"+tokenFP {
					creds[name] = true
				}
			}
			if _, ok := t["match"].(map[string]any); ok {
				bindings = append(bindings, t)
			}
			for _, e := range t {
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	for _, b := range bindings {
		m := b["match"].(map[string]any)
		hosts, _ := m["hosts"].([]any)
		matched := false
		for _, h := range hosts {
			if s, ok := h.(string); ok && vaultHostMatches(s, host) {
				matched = true
			}
		}
		if matched && bindingUses(b["auth"], creds) {
			return true
		}
	}
	return false
}

// bindingUses: the binding's auth names one of the credentials (auth.credential,
// or a customHeaders entry's credential).
func bindingUses(auth any, creds map[string]bool) bool {
	a, ok := auth.(map[string]any)
	if !ok {
		return false
	}
	if c, _ := a["credential"].(string); creds[c] {
		return true
	}
	hs, _ := a["headers"].([]any)
	for _, h := range hs {
		if m, ok := h.(map[string]any); ok {
			if c, _ := m["credential"].(string); creds[c] {
				return true
			}
		}
	}
	return false
}

// vaultHostMatches: a binding host (an FQDN or *.suffix, CONTRACT §3.5)
// covers host.
func vaultHostMatches(pattern, host string) bool {
	pattern = strings.ToLower(strings.TrimSuffix(pattern, "."))
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	return pattern == host
}
