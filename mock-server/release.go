package mockserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Releasing a tenant (a mock extension): the grader releases a submission's
// tenant once that submission's grading ends, so nothing made with its keys
// outlives its grade. ReleaseTenant revokes the tenant's keys (every later
// call with one answers 401, a create in flight is refused), removes its
// sandboxes (their processes killed, cgroups, mounts and network namespaces
// removed, as a DELETE does; recorded as deleted with the reason "tenant
// released"), its snapshots and its named volumes (tenantvolumes.go).
// Released is for good: a tenant's name is not reused.

// TenantRelease is what ReleaseTenant removed (POST /_mock/tenants/release).
type TenantRelease = wire.TenantRelease

// ReleaseTenant releases tenant (see above). Releasing an unknown or
// already released tenant removes nothing and is not an error.
func (s *Server) ReleaseTenant(tenant string) (TenantRelease, error) {
	out := TenantRelease{Tenant: tenant, Sandboxes: []string{}, Volumes: []string{}}
	if err := checkTenant(tenant); err != nil {
		return out, err
	}
	s.mu.Lock()
	if s.released == nil {
		s.released = map[string]bool{}
	}
	s.released[tenant] = true
	fps := map[string]bool{}
	for fp, t := range s.tenants {
		if t == tenant {
			fps[fp] = true
		}
	}
	kept := s.apiKeys[:0:0]
	for _, k := range s.apiKeys {
		if fps[Fingerprint(string(k))] {
			out.KeysRevoked++
			continue
		}
		kept = append(kept, k)
	}
	s.apiKeys = kept
	s.revoked = s.revoked || out.KeysRevoked > 0
	var ids []string
	for id, sb := range s.sandboxes {
		if sb.tenant == tenant || (sb.keyFP != "" && fps[sb.keyFP]) {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	sort.Strings(ids)
	var errs []error
	for _, id := range ids {
		err := s.remove(id, "Deleted", "tenant released", false)
		switch {
		case err == nil:
			out.Sandboxes = append(out.Sandboxes, id)
		case errors.Is(err, ErrNotFound): // removed meanwhile
		default:
			out.Sandboxes = append(out.Sandboxes, id)
			errs = append(errs, err)
		}
	}
	out.Snapshots = s.releaseTenantSnapshots(fps)
	out.Volumes = append(out.Volumes, s.releaseTenantVolumes(tenant)...)
	s.audit.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "tenant-release", Active: true,
		Detail: "tenant " + tenant + " released: its keys revoked, its sandboxes, snapshots and named volumes removed"}})
	return out, errors.Join(errs...)
}

// isReleased says whether tenant was released.
func (s *Server) isReleased(tenant string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return tenant != "" && s.released[tenant]
}

// releaseTenantSnapshots removes the snapshots made with keys of fps that
// are not being created or restored right now (those go with the server).
func (s *Server) releaseTenantSnapshots(fps map[string]bool) int {
	st := &s.snaps
	st.mu.Lock()
	var gone []*snapshotRec
	for id, rec := range st.byID {
		if rec.keyFP != "" && fps[rec.keyFP] && rec.state != "Creating" && rec.restoring == 0 {
			delete(st.byID, id)
			gone = append(gone, rec)
		}
	}
	st.mu.Unlock()
	for _, rec := range gone {
		_ = os.RemoveAll(rec.dir)
		st.release(rec)
	}
	return len(gone)
}

// adminReleaseTenant: POST /_mock/tenants/release {"tenant":"…"} → 200 TenantRelease.
func (s *Server) adminReleaseTenant(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Tenant string `json:"tenant"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || checkTenant(body.Tenant) != nil {
		writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER",
			`body must be {"tenant": "<tenant>"}: the tenant whose keys, sandboxes, snapshots and named volumes are removed`)
		return
	}
	rel, err := s.ReleaseTenant(body.Tenant)
	if err != nil {
		rel.Error = strings.TrimPrefix(err.Error(), "mockserver: ")
		writeJSON(w, http.StatusInternalServerError, rel)
		return
	}
	writeJSON(w, http.StatusOK, rel)
}
