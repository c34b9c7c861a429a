package mockserver

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
)

// The named-volume registry persists, beside the volumes, what the servers
// sharing a volume root need to know across a crash (SIGKILL):
//
//	<root>/.osb/lock          flock(LOCK_EX) while a server acquires, releases or sweeps
//	<root>/.osb/owned/<claim> the volume was auto-created with deleteOnSandboxTermination:
//	                          remove it once no live server uses it
//	<root>/.osb/users/<token> one per live server: the claims it mounts ({"claims":{name:refs}}),
//	                          flock(LOCK_EX) held by that server for as long as it runs, so a
//	                          free lock means its server is dead and its claims count for nothing
//
// A server releasing its last use of an owned volume removes it unless a live
// server still uses it; a volume left by a server that died is removed by the
// next sweep (every bundled start sweeps its volume root and the volume root
// of each dead instance it reaps). claimName never starts with '.', so the
// registry never collides with a volume.
const (
	volumeRegDir  = ".osb"
	volumeRootRec = "volume-root" // in an instance's state dir: the volume root it used
)

// volumeRegistry is one server's handle on a volume root's registry.
type volumeRegistry struct {
	root string
	self *os.File // users/<token>, flock held while the server runs
}

// openVolumeRegistry creates the registry directories and this server's
// users file (locked). stateDir, when set, records the root for the reaper.
func openVolumeRegistry(root, stateDir string) (*volumeRegistry, error) {
	meta := filepath.Join(root, volumeRegDir)
	for _, d := range []string{meta, filepath.Join(meta, "owned"), filepath.Join(meta, "users")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	unlock, err := lockVolumeRoot(root) // a sweeper never sees the file before it is locked
	if err != nil {
		return nil, err
	}
	defer unlock()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	f, err := os.OpenFile(filepath.Join(meta, "users", fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(rnd[:]))),
		os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = os.Remove(f.Name())
		f.Close()
		return nil, err
	}
	if stateDir != "" {
		_ = os.WriteFile(filepath.Join(stateDir, volumeRootRec), []byte(root+"\n"), 0o600)
	}
	return &volumeRegistry{root: root, self: f}, nil
}

// lockVolumeRoot takes the registry lock of root (blocking: every holder is brief).
func lockVolumeRoot(root string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(root, volumeRegDir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing the last descriptor releases the lock
}

// publish writes this server's claims (under the registry lock).
func (r *volumeRegistry) publish(refs map[string]int) error {
	b, _ := json.Marshal(struct {
		Claims map[string]int `json:"claims"`
	}{refs})
	if err := r.self.Truncate(0); err != nil {
		return err
	}
	_, err := r.self.WriteAt(b, 0)
	return err
}

func ownedMarker(root, claim string) string { return filepath.Join(root, volumeRegDir, "owned", claim) }

// close removes this server's users file (its claims no longer count).
func (r *volumeRegistry) close() {
	_ = os.Remove(r.self.Name())
	_ = r.self.Close()
}

// sweepVolumes removes, under the registry lock (the caller holds it), every
// owned volume of root that no live server uses (only the claims in only,
// when not nil), and the users files of dead servers. When a users file
// cannot be judged, nothing is removed. Returns what it removed.
func sweepVolumes(root string, only map[string]bool) []string {
	meta := filepath.Join(root, volumeRegDir)
	inUse := map[string]bool{}
	users, err := os.ReadDir(filepath.Join(meta, "users"))
	if err != nil && !os.IsNotExist(err) {
		return nil
	}
	var removed []string
	for _, u := range users {
		p := filepath.Join(meta, "users", u.Name())
		live, claims, err := readVolumeUser(p)
		if err != nil {
			return removed // undecidable: keep everything
		}
		if !live {
			_ = os.Remove(p) // bookkeeping of a dead server
			continue
		}
		for c, n := range claims {
			if n > 0 {
				inUse[c] = true
			}
		}
	}
	owned, _ := os.ReadDir(filepath.Join(meta, "owned"))
	names := make([]string, 0, len(owned))
	for _, o := range owned {
		names = append(names, o.Name())
	}
	sort.Strings(names)
	for _, c := range names {
		if (only != nil && !only[c]) || inUse[c] || !volumeNameRE.MatchString(c) {
			continue
		}
		dir := filepath.Join(root, c)
		if err := os.RemoveAll(dir); err != nil {
			continue
		}
		_ = os.Remove(ownedMarker(root, c))
		removed = append(removed, "named volume "+dir)
	}
	return removed
}

// readVolumeUser says whether a users file's server is alive (its lock is
// held) and, if so, the claims it publishes.
func readVolumeUser(p string) (bool, map[string]int, error) {
	f, err := os.Open(p)
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil, nil
		}
		return false, nil, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return false, nil, nil // nobody holds it: its server is gone
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil, err
	}
	var rec struct {
		Claims map[string]int `json:"claims"`
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return false, nil, err
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &rec); err != nil {
			return false, nil, err
		}
	}
	return true, rec.Claims, nil
}

// SweepNamedVolumes removes the owned volumes of root that no live server
// uses (a server that died left them) and the tenant volume roots of dead
// servers (tenantvolumes.go); a root without a registry is left
// alone (nothing is created). Returns what it removed.
func SweepNamedVolumes(root string) []string {
	if root == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(root, volumeRegDir, "owned")); err != nil {
		return nil
	}
	unlock, err := lockVolumeRoot(root)
	if err != nil {
		return nil
	}
	defer unlock()
	// tenant roots of dead servers (tenantvolumes.go), then owned volumes
	return append(sweepTenantRoots(root), sweepVolumes(root, nil)...)
}
