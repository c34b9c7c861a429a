package mockserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"
)

// Key tenancy is a documented mock extension, off unless the admin asks for
// it: OpenSandbox 1.1.1 has one flat key space in which every key sees every
// sandbox. A key added with a tenant (AddAPIKeyTenant, or POST
// /_mock/api-keys {"key","tenant"}) sees only the sandboxes created with keys
// of the same tenant: the list leaves the others out, and every lifecycle
// call naming another tenant's sandbox (get, delete, pause, resume, renew,
// metadata, endpoints, diagnostics, server proxy) answers exactly what the
// server answers for a sandbox that does not exist (404
// DOCKER::SANDBOX_NOT_FOUND). Keys without a tenant (the server's --api-key,
// keys added without one, and calls without a key) see every sandbox, as
// before. A sandbox belongs to the tenant of the key it was created with
// (none: the harness's own, untenanted). Grading many submissions on one
// server gives each submission's keys their own tenant, so a careless reap
// of one cannot delete another's sandboxes. Execd endpoints are not covered:
// an execd port is reached without the lifecycle key.

// maxTenantLen bounds a tenant name.
const maxTenantLen = 128

// checkTenant validates a tenant name: printable, no surrounding space.
func checkTenant(tenant string) error {
	if tenant == "" {
		return errors.New("mockserver: empty tenant")
	}
	if len(tenant) > maxTenantLen {
		return fmt.Errorf("mockserver: tenant longer than %d bytes", maxTenantLen)
	}
	if strings.TrimSpace(tenant) != tenant {
		return errors.New("mockserver: tenant has leading or trailing space")
	}
	for _, r := range tenant {
		if !unicode.IsPrint(r) {
			return errors.New("mockserver: tenant has a non-printable character")
		}
	}
	return nil
}

// AddAPIKeyTenant makes key valid, as AddAPIKey, and puts it in tenant: its
// lifecycle calls see only sandboxes created by keys of the same tenant.
// Adding a key again with another tenant is an error.
func (s *Server) AddAPIKeyTenant(key, tenant string) error {
	if key == "" {
		return errors.New("mockserver: empty API key")
	}
	if s.cfg.NoAuth {
		return ErrAuthOff
	}
	if err := checkTenant(tenant); err != nil {
		return err
	}
	fp := Fingerprint(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released[tenant] {
		return fmt.Errorf("mockserver: tenant %q was released", tenant)
	}
	if t, ok := s.tenants[fp]; ok {
		if t != tenant {
			return fmt.Errorf("mockserver: the key is already in tenant %q", t)
		}
		return nil
	}
	if s.tenants == nil {
		s.tenants = map[string]string{}
	}
	s.tenants[fp] = tenant
	s.apiKeys = append(s.apiKeys, []byte(key))
	return nil
}

// requestTenant is the tenant of the request's API key ("" untenanted).
func (s *Server) requestTenant(r *http.Request) string {
	k := r.Header.Get(headerAPIKey)
	if k == "" {
		return ""
	}
	fp := Fingerprint(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tenants[fp]
}

// visibleTo says whether a caller of tenant sees sb.
func (s *Server) visibleTo(tenant string, sb *sandbox) bool {
	if tenant == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return sb.keyFP != "" && s.tenants[sb.keyFP] == tenant
}

// lookupFor is lookup as the request's key sees it: another tenant's sandbox
// is nil, as an unknown one.
func (s *Server) lookupFor(r *http.Request, id string) *sandbox {
	sb := s.lookup(id)
	if sb == nil || !s.visibleTo(s.requestTenant(r), sb) {
		return nil
	}
	return sb
}

// adminAPIKeys adds an API key, with a tenant or without:
// POST /_mock/api-keys {"key":"…"[,"tenant":"…"]} → 204.
func (s *Server) adminAPIKeys(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Key    string  `json:"key"`
		Tenant *string `json:"tenant"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Key == "" {
		writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER",
			`body must be {"key": "<API key>"} and optionally "tenant": a name whose keys see only the sandboxes its keys created`)
		return
	}
	var err error
	if body.Tenant == nil {
		err = s.AddAPIKey(body.Key)
	} else {
		err = s.AddAPIKeyTenant(body.Key, *body.Tenant)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", strings.TrimPrefix(err.Error(), "mockserver: "))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
