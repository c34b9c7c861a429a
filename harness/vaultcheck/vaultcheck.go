// Package vaultcheck judges whether the data API got the submission's token
// through the Credential Vault (dataAPIGotRealToken).
//
// On a real target (docker) no gateway records whether the vault injected a
// credential into a request: a call that reached the data API with this
// submission's real token (identity: the token, one per submission) came
// through the vault only if one of the run's sandboxes (identity: the sandboxes its recording proxy saw it
// create) had that token in its Credential Vault, bound to the data API's
// host, and was created with credentialProxy on. Both are read from what the
// recording proxy saw: the create requests, and the vault writes sent
// through the sandboxes' rewritten 18080 endpoints, whose secret values it
// keeps as fingerprints only (observe.redactVault).
//
// Holders is that check: the data API call came through the vault only if
// one of the sandboxes it names exists; OnRealTarget judges it.
//
// On the bundled server the egress gateway records every request a sandbox
// sent the data API host and whether the vault injected a credential into
// it (identity: the sandbox); the stub confirms it received this
// submission's own token (identity: the token, one per submission):
// OnBundledServer. Elsewhere only the token attributes a call: a call
// without it cannot be told from another submission's, so it is never held
// against this one.
package vaultcheck

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
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

// OnRealTarget judges the vault path on a real target: the data API
// received the submission's real token (gotReal) only through a sandbox of
// the run whose vault held it for host (holders). exit is the run's exit
// code; target and stubNote name the target for the reason.
func OnRealTarget(holders []string, gotReal bool, host string, exit int, target, stubNote string) (string, error) {
	if gotReal {
		if len(holders) == 0 {
			return "", command.Violationf("the data API received this submission's real token, but none of this run's sandboxes had it in its Credential Vault bound to %s with credentialProxy on (the create requests and vault writes its recording proxy saw): the token did not come through the vault", host)
		}
		return fmt.Sprintf("the data API received this submission's real token; the Credential Vault of sandbox %s held it for %s with credentialProxy on (seen by the recording proxy)", strings.Join(holders, ", "), host), nil
	}
	why := fmt.Sprintf("the data API never received this submission's real token since the run started (exit %d); a call without it cannot be attributed to this run on target %s, so the vault path is not measured",
		exit, target)
	if stubNote != "" {
		why += " (" + stubNote + ")"
	}
	return "", command.NotMeasuredf(string(rubric.CategoryPreconditionUnmet), "%s", why)
}

// OnBundledServer judges the vault path on the bundled server: every call of
// the run's sandboxes to the data API host (saw: what the server saw of the
// run's key) was given the credential by the vault, and the data API
// received the submission's real token (gotReal).
func OnBundledServer(saw command.Saw, host string, gotReal bool, exit int) (string, error) {
	calls, injected := 0, 0
	for _, ev := range command.EgressRequests(saw.Events) {
		q := ev.EgressRequest
		if host == "" || !command.SameHost(q.Host, host) {
			continue
		}
		calls++
		if q.Injected {
			injected++
			continue
		}
		return "", command.Violationf("sandbox %s called the data API (%s %s) and the vault injected no credential: it left the sandbox with Authorization %s and the API answered %d",
			ev.SandboxID, q.Method, clip(q.Path, 120), q.Authorization, q.Status)
	}
	switch {
	case calls == 0:
		return "", command.NotMeasuredf(string(rubric.CategoryPreconditionUnmet),
			"no sandbox of this run called the data API (exit %d), so the vault path was not exercised", exit)
	case !gotReal:
		return "", command.Violationf("the vault injected a credential into the %d data API call(s) of this run's sandboxes, but the data API never received this submission's real token", calls)
	}
	return fmt.Sprintf("the data API received the real token: %d call(s) from this run's sandboxes, each given the credential by the vault (this submission's own token reached the API)", injected), nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
