package mockserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	osbruntime "github.com/osb-capstone/acceptance/mock-server/runtime"
)

// Named volumes per tenant (a mock extension; the real server has no
// tenants). A key of a tenant (tenancy.go) resolves a claimName in its
// tenant's own volume root, <volume root>/.tenants/<server>-<tenant hash>,
// never in the shared one: two tenants naming the same claim get two
// volumes, and neither sees the other's. That root is a tmpfs of
// Config.VolumeQuotaBytes (DefaultVolumeQuota), mounted nosuid,nodev: the
// tenant's volumes together cannot hold more (a write past it fails with
// ENOSPC), and a setuid file or device node written there is inert on the
// host as in every sandbox. The root is this server's alone (its name
// carries a token of the server) and lives only as long as the tenant:
// ReleaseTenant and Close unmount and remove it, and a start sweeps the
// roots a dead server left (SweepNamedVolumes). Untenanted keys keep the
// shared root (<volume root>/<claimName>, kept across runs).

// DefaultVolumeQuota is a tenant's named-volume quota (256 MiB) when
// Config.VolumeQuotaBytes is 0.
const DefaultVolumeQuota = 256 << 20

// tenantVolumesDir holds the tenants' roots under the volume root (a
// claimName never starts with '.').
const tenantVolumesDir = ".tenants"

// tenantVolume is one tenant's volume root on this server.
type tenantVolume struct {
	dir     string
	mounted bool
}

// serverToken names this server's tenant roots (random, per server).
func (s *Server) serverToken() string {
	s.volumes.tokenOnce.Do(func() {
		var b [6]byte
		_, _ = rand.Read(b[:])
		s.volumes.token = hex.EncodeToString(b[:])
	})
	return s.volumes.token
}

// volumeRootFor is where tenant's named volumes live, created (and its
// quota mounted) on first use. The caller holds s.volumes.mu.
func (s *Server) volumeRootFor(tenant string) (string, error) {
	base := s.cfg.VolumeRoot
	if tenant == "" {
		return base, nil
	}
	st := &s.volumes
	if tv := st.tenants[tenant]; tv != nil {
		return tv.dir, nil
	}
	if s.isReleased(tenant) { // a create in flight when its tenant was released
		return "", fmt.Errorf("tenant %q was released", tenant)
	}
	if _, err := s.registry(base); err != nil { // the shared root's registry: its lock, and the reaper's record
		return "", err
	}
	h := sha256.Sum256([]byte(tenant))
	parent := filepath.Join(base, tenantVolumesDir)
	dir := filepath.Join(parent, s.serverToken()+"-"+hex.EncodeToString(h[:8]))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", err
	}
	unlock, err := lockVolumeRoot(base) // a sweep of the shared root never sees it half made
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	tv := &tenantVolume{dir: dir}
	quota := s.cfg.VolumeQuotaBytes
	if quota == 0 {
		quota = DefaultVolumeQuota
	}
	if quota > 0 {
		if err := osbruntime.MountVolumeFS(dir, quota); err != nil {
			_ = os.Remove(dir)
			return "", err
		}
		tv.mounted = true
	}
	if _, err := s.registry(dir); err != nil {
		removeTenantRoot(tv)
		return "", err
	}
	if st.tenants == nil {
		st.tenants = map[string]*tenantVolume{}
	}
	st.tenants[tenant] = tv
	return dir, nil
}

// releaseTenantVolumes removes tenant's volume root (every volume in it);
// its sandboxes must be gone. Returns what it removed.
func (s *Server) releaseTenantVolumes(tenant string) []string {
	st := &s.volumes
	st.mu.Lock()
	tv := st.tenants[tenant]
	delete(st.tenants, tenant)
	if tv != nil {
		if r := st.regs[tv.dir]; r != nil {
			r.close()
		}
		delete(st.regs, tv.dir)
		delete(st.refs, tv.dir)
	}
	st.mu.Unlock()
	if tv == nil {
		return nil
	}
	if err := removeTenantRoot(tv); err != nil {
		s.log.Warn("removing a tenant's named volumes", "dir", tv.dir, "err", err)
		return nil
	}
	return []string{"named volumes " + tv.dir}
}

// releaseAllTenantVolumes removes every tenant root of this server (Close).
func (s *Server) releaseAllTenantVolumes() {
	s.volumes.mu.Lock()
	tenants := make([]string, 0, len(s.volumes.tenants))
	for t := range s.volumes.tenants {
		tenants = append(tenants, t)
	}
	s.volumes.mu.Unlock()
	for _, t := range tenants {
		s.releaseTenantVolumes(t)
	}
}

// removeTenantRoot unmounts a tenant root and removes it.
func removeTenantRoot(tv *tenantVolume) error {
	if tv.mounted {
		if err := osbruntime.UnmountVolumeFS(tv.dir); err != nil {
			return err
		}
	}
	return os.RemoveAll(tv.dir)
}

// sweepTenantRoots removes the tenant roots under base whose server is gone
// (no live users file in their registry); the caller holds base's lock.
func sweepTenantRoots(base string) []string {
	parent := filepath.Join(base, tenantVolumesDir)
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		dir := filepath.Join(parent, e.Name())
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		live, err := rootHasLiveUser(dir)
		if err != nil || live {
			continue
		}
		if err := removeTenantRoot(&tenantVolume{dir: dir, mounted: true}); err == nil {
			removed = append(removed, "named volumes "+dir)
		}
	}
	return removed
}

// rootHasLiveUser says whether a live server holds a users file in root's registry.
func rootHasLiveUser(root string) (bool, error) {
	users, err := os.ReadDir(filepath.Join(root, volumeRegDir, "users"))
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, u := range users {
		live, _, err := readVolumeUser(filepath.Join(root, volumeRegDir, "users", u.Name()))
		if err != nil {
			return false, fmt.Errorf("%s: %w", u.Name(), err)
		}
		if live {
			return true, nil
		}
	}
	return false, nil
}
