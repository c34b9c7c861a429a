package egress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// serveVault handles /credential-vault[...] (CONTRACT §3.5). The caller has
// already passed the auth check.
func (a *Attachment) serveVault(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/credential-vault")
	if rest == "/_active" {
		http.Error(w, "the active credential vault is only served on the private socket", http.StatusForbidden)
		return
	}
	switch {
	case rest == "":
		switch r.Method {
		case http.MethodGet:
			a.withVault(w, func(v *vault) { writeJSON(w, http.StatusOK, v.state()) })
		case http.MethodPost:
			if a.vaultWriteGuard(w, r, true) {
				a.vaultCreate(w, r)
			}
		case http.MethodPatch:
			if a.vaultWriteGuard(w, r, true) {
				a.vaultPatch(w, r)
			}
		case http.MethodDelete:
			if a.vaultWriteGuard(w, r, false) {
				a.vaultDelete(w)
			}
		default:
			w.Header().Set("Allow", "GET, POST, PATCH, DELETE")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	case rest == "/credentials" || rest == "/bindings" || strings.HasPrefix(rest, "/credentials/") || strings.HasPrefix(rest, "/bindings/"):
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		a.vaultRead(w, rest)
	default:
		http.NotFound(w, r)
	}
}

// vaultWriteGuard enforces 412 (credential proxy not enabled at create) and
// 426 (a write over plain HTTP from a non-loopback peer).
func (a *Attachment) vaultWriteGuard(w http.ResponseWriter, r *http.Request, needsProxy bool) bool {
	if needsProxy && !a.credentialProxy {
		http.Error(w, "credential vault requires credentialProxy.enabled at sandbox create (transparent MITM is off)", http.StatusPreconditionFailed)
		return false
	}
	if r.TLS == nil && !isLoopbackPeer(r.RemoteAddr) {
		w.Header().Set("Upgrade", "TLS/1.2, HTTP/1.1")
		http.Error(w, "credential vault writes need TLS or a loopback peer", http.StatusUpgradeRequired)
		return false
	}
	return true
}

func isLoopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (a *Attachment) withVault(w http.ResponseWriter, fn func(v *vault)) {
	a.mu.RLock()
	v := a.vault
	a.mu.RUnlock()
	if v == nil {
		http.Error(w, errVaultNotFound.Error(), http.StatusNotFound)
		return
	}
	fn(v)
}

func decodeStrict(r *http.Request, dst any) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("invalid request body: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("invalid request body: trailing data")
	}
	return nil
}

func (a *Attachment) vaultCreate(w http.ResponseWriter, r *http.Request) {
	var req vaultCreateRequest
	if err := decodeStrict(r, &req); err != nil {
		bodyError(w, err)
		return
	}
	a.mu.Lock()
	if a.vault != nil {
		a.mu.Unlock()
		http.Error(w, errVaultExists.Error(), http.StatusConflict)
		return
	}
	v, err := newVault(req, a.policy)
	if err != nil {
		a.mu.Unlock()
		http.Error(w, err.Error(), vaultStatus(err))
		return
	}
	a.vault = v
	state := v.state()
	a.mu.Unlock()
	a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindVault, Vault: &wire.Vault{Op: "create", Revision: v.revision}})
	writeJSON(w, http.StatusCreated, state)
}

func (a *Attachment) vaultPatch(w http.ResponseWriter, r *http.Request) {
	var req vaultMutationRequest
	if err := decodeStrict(r, &req); err != nil {
		bodyError(w, err)
		return
	}
	a.mu.Lock()
	if a.vault == nil {
		a.mu.Unlock()
		http.Error(w, errVaultNotFound.Error(), http.StatusNotFound)
		return
	}
	next, err := a.vault.mutate(req, a.policy)
	if err != nil {
		a.mu.Unlock()
		http.Error(w, err.Error(), vaultStatus(err))
		return
	}
	a.vault = next
	state := next.state()
	a.mu.Unlock()
	a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindVault, Vault: &wire.Vault{Op: "patch", Revision: next.revision}})
	writeJSON(w, http.StatusOK, state)
}

func (a *Attachment) vaultDelete(w http.ResponseWriter) {
	a.mu.Lock()
	v := a.vault
	a.vault = nil
	a.mu.Unlock()
	if v == nil {
		http.Error(w, errVaultNotFound.Error(), http.StatusNotFound)
		return
	}
	a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindVault, Vault: &wire.Vault{Op: "delete", Revision: v.revision}})
	w.WriteHeader(http.StatusNoContent)
}

func (a *Attachment) vaultRead(w http.ResponseWriter, rest string) {
	a.withVault(w, func(v *vault) {
		switch {
		case rest == "/credentials":
			writeJSON(w, http.StatusOK, map[string]any{"revision": v.revision, "credentials": v.credentialList()})
		case rest == "/bindings":
			writeJSON(w, http.StatusOK, map[string]any{"revision": v.revision, "bindings": v.bindingList()})
		case strings.HasPrefix(rest, "/credentials/"):
			name := strings.TrimPrefix(rest, "/credentials/")
			c, ok := v.creds[name]
			if !ok {
				http.Error(w, fmt.Sprintf("credential %q not found", name), http.StatusNotFound)
				return
			}
			writeJSON(w, http.StatusOK, credentialMeta{Name: c.name, SourceType: c.sourceType, Revision: c.revision})
		default:
			name := strings.TrimPrefix(rest, "/bindings/")
			b, ok := v.bindings[name]
			if !ok {
				http.Error(w, fmt.Sprintf("binding %q not found", name), http.StatusNotFound)
				return
			}
			writeJSON(w, http.StatusOK, b.metadata())
		}
	})
}
