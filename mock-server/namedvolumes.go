package mockserver

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	osbruntime "github.com/osb-capstone/acceptance/mock-server/runtime"
)

// Named volumes (the pvc backend). On OpenSandbox 1.1.1's Docker runtime a
// pvc volume is a Docker named volume: claimName is the volume's name, the
// volume must exist unless pvc.createIfNotExists (default true) lets the
// server create it, and pvc.deleteOnSandboxTermination (default false)
// removes a volume this request created once its sandbox is gone (a volume
// that existed before is never removed). Here a named volume is the
// directory <Config.VolumeRoot>/<claimName>, shared by every sandbox that
// mounts it and kept across server restarts, as Docker keeps its volumes.
// claimName is checked against the real server's pattern (lower-case
// alphanumerics and '-', at most 253 characters: no '/', no '..'); subPath is
// resolved beneath the volume (openat2 RESOLVE_BENEATH: '..' and symbolic
// links that leave the volume are refused), missing directories created as
// Docker creates a missing bind source, and the mount is made from the
// opened descriptor, so nothing swapped in later can redirect it.

// volumeStore counts the live references to each named volume; which
// volumes to delete once unused, and which a live server uses, are kept in
// the volume root's registry (volumereg.go), so a crash loses neither.
type volumeStore struct {
	mu   sync.Mutex
	regs map[string]*volumeRegistry // volume root → this server's registry handle
	refs map[string]map[string]int  // volume root → claimName → mounts held by live (or starting) sandboxes
	// tenants: each tenant's own volume root on this server (tenantvolumes.go)
	tenants   map[string]*tenantVolume
	token     string // names this server's tenant roots
	tokenOnce sync.Once
}

// volumeClaim is one reference a sandbox holds (released when it is removed).
type volumeClaim struct{ root, claim, dir string }

// registry opens (once) this server's handle on root's registry; the caller holds st.mu.
func (s *Server) registry(root string) (*volumeRegistry, error) {
	st := &s.volumes
	if r := st.regs[root]; r != nil {
		return r, nil
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	stateDir := ""
	if root == s.cfg.VolumeRoot { // the reaper's record names the shared root (tenant roots are beneath it)
		stateDir = s.cfg.StateDir
	}
	r, err := openVolumeRegistry(root, stateDir)
	if err != nil {
		return nil, err
	}
	if st.regs == nil {
		st.regs, st.refs = map[string]*volumeRegistry{}, map[string]map[string]int{}
	}
	st.regs[root], st.refs[root] = r, map[string]int{}
	return r, nil
}

// closeVolumeRegistries drops this server's registry handles (Close, after
// every sandbox released its volumes).
func (s *Server) closeVolumeRegistries() {
	st := &s.volumes
	st.mu.Lock()
	defer st.mu.Unlock()
	for root, r := range st.regs {
		r.close()
		delete(st.regs, root)
	}
}

// acquirePVC resolves one pvc volume: the volume directory (created when
// allowed), subPath beneath it, and an open descriptor to bind. The claim
// must be released (releaseVolumes) when the sandbox is gone or its create fails.
func (s *Server) acquirePVC(tenant string, v volumeSpec, p pvcSpec, sub string) (*os.File, *volumeClaim, int, string, string) {
	const bad = http.StatusBadRequest
	root := s.cfg.VolumeRoot
	if root == "" {
		return nil, nil, bad, "VOLUME::UNSUPPORTED_BACKEND", fmt.Sprintf("Volume '%s': named volumes (pvc) are not configured on this server (no volume root).", v.Name)
	}
	if !volumeNameRE.MatchString(p.ClaimName) || len(p.ClaimName) > 253 {
		return nil, nil, bad, "VOLUME::INVALID_PVC_NAME", fmt.Sprintf("PVC claim name '%s' is not a valid Kubernetes resource name.", p.ClaimName)
	}
	inspectFailed := func(err error) (*os.File, *volumeClaim, int, string, string) {
		s.log.Warn("named volume", "claim", p.ClaimName, "err", err)
		return nil, nil, http.StatusInternalServerError, "VOLUME::PVC_INSPECT_FAILED",
			fmt.Sprintf("Volume '%s': failed to inspect named volume '%s'.", v.Name, p.ClaimName)
	}
	st := &s.volumes
	st.mu.Lock()
	defer st.mu.Unlock()
	root, err := s.volumeRootFor(tenant) // the tenant's own (tenantvolumes.go)
	if err != nil {
		return inspectFailed(fmt.Errorf("the tenant's volume root: %w", err))
	}
	dir := filepath.Join(root, p.ClaimName)
	reg, err := s.registry(root)
	if err != nil {
		return inspectFailed(fmt.Errorf("volume registry: %w", err))
	}
	unlock, err := lockVolumeRoot(root)
	if err != nil {
		return inspectFailed(fmt.Errorf("volume registry: %w", err))
	}
	defer unlock()
	created := false
	info, err := os.Lstat(dir)
	switch {
	case os.IsNotExist(err):
		if p.CreateIfNotExists != nil && !*p.CreateIfNotExists {
			return nil, nil, bad, "VOLUME::PVC_NOT_FOUND", fmt.Sprintf("Volume '%s': Docker named volume '%s' does not exist. "+
				"Named volumes must be created before sandbox creation (e.g., 'docker volume create <name>').", v.Name, p.ClaimName)
		}
		if p.DeleteOnSandboxTermination {
			// marked before it exists: a crash in between leaves only a marker, which a sweep drops
			if err := os.WriteFile(ownedMarker(root, p.ClaimName), nil, 0o600); err != nil {
				return inspectFailed(err)
			}
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = os.Remove(ownedMarker(root, p.ClaimName))
			return nil, nil, http.StatusInternalServerError, "VOLUME::PVC_INSPECT_FAILED",
				fmt.Sprintf("Volume '%s': failed to auto-create named volume '%s'.", v.Name, p.ClaimName)
		}
		created = true
		s.log.Info("auto-created named volume", "claim", p.ClaimName, "dir", dir)
	case err != nil:
		return inspectFailed(err)
	case !info.IsDir():
		return inspectFailed(fmt.Errorf("%s is not a directory", dir))
	}
	f, err := osbruntime.OpenBeneath(dir, sub, true)
	if err != nil {
		if created {
			_ = os.RemoveAll(dir)
			_ = os.Remove(ownedMarker(root, p.ClaimName))
		}
		switch {
		case errors.Is(err, osbruntime.ErrEscapes):
			return nil, nil, bad, "VOLUME::INVALID_SUB_PATH", fmt.Sprintf("Volume '%s': resolved subPath escapes the volume mountpoint after symlink resolution.", v.Name)
		case errors.Is(err, osbruntime.ErrNotMountable):
			return nil, nil, bad, "VOLUME::INVALID_SUB_PATH", fmt.Sprintf("Volume '%s': subPath '%s' is neither a directory nor a regular file.", v.Name, sub)
		}
		return inspectFailed(err)
	}
	st.refs[root][p.ClaimName]++
	if err := reg.publish(st.refs[root]); err != nil {
		s.log.Warn("volume registry: publishing this server's claims", "root", root, "err", err)
	}
	return f, &volumeClaim{root: root, claim: p.ClaimName, dir: dir}, 0, "", ""
}

// releaseVolumes drops a sandbox's (or a failed create's) references; an
// auto-created volume with deleteOnSandboxTermination is removed once no
// sandbox of any live server uses it (Docker refuses to remove a volume in use).
func (s *Server) releaseVolumes(claims []*volumeClaim) {
	st := &s.volumes
	st.mu.Lock()
	defer st.mu.Unlock()
	byRoot := map[string]map[string]bool{}
	for _, c := range claims {
		if c == nil || st.refs[c.root] == nil {
			continue
		}
		refs := st.refs[c.root]
		if refs[c.claim]--; refs[c.claim] <= 0 {
			delete(refs, c.claim)
			if byRoot[c.root] == nil {
				byRoot[c.root] = map[string]bool{}
			}
			byRoot[c.root][c.claim] = true
		}
	}
	for root, unused := range byRoot {
		unlock, err := lockVolumeRoot(root)
		if err != nil {
			s.log.Warn("volume registry", "root", root, "err", err)
			continue
		}
		if err := st.regs[root].publish(st.refs[root]); err != nil {
			s.log.Warn("volume registry: publishing this server's claims", "root", root, "err", err)
		}
		for _, r := range sweepVolumes(root, unused) {
			s.log.Info("removed auto-created named volume", "what", r)
		}
		unlock()
	}
}

// pvcSpec is the pvc backend object.
type pvcSpec struct {
	ClaimName                  string `json:"claimName"`
	CreateIfNotExists          *bool  `json:"createIfNotExists"`
	DeleteOnSandboxTermination bool   `json:"deleteOnSandboxTermination"`
}
