//go:build linux

package runtime

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Reap removes what a previous, killed server left in this state dir: the
// processes, network namespace, cgroups and directory of every sandbox
// directory not owned by this runtime. It only touches sandboxes recorded in
// its own state dir, so two servers with different state dirs never reap each
// other.
func (l *Linux) Reap() ([]string, error) {
	root := filepath.Join(l.stateDir, "sandboxes")
	ents, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	var firstErr error
	for _, e := range ents {
		id := e.Name()
		l.mu.Lock()
		_, live := l.live[id]
		l.mu.Unlock()
		if live {
			continue
		}
		dir := filepath.Join(root, id)
		var m meta
		if b, err := os.ReadFile(filepath.Join(dir, "meta.json")); err == nil {
			_ = json.Unmarshal(b, &m)
		}
		if m.ID == "" {
			m.ID = id
		}
		// 1. processes: cgroup members, then host-side wrappers referencing the dir.
		if l.cg != nil && idRE.MatchString(m.ID) && (m.Group == "" || idRE.MatchString(m.Group)) {
			sc := l.cg.sandboxIn(m.Group, m.ID)
			for _, p := range sc.Pids() {
				removed = append(removed, "process "+strconv.Itoa(p))
			}
			if err := sc.killAll(5 * time.Second); err != nil && firstErr == nil {
				firstErr = err
			}
			for ctrl, d := range sc.Dirs {
				if _, err := os.Stat(d); err == nil {
					removed = append(removed, fmt.Sprintf("cgroup %s:%s", ctrl, d))
				}
			}
			if err := sc.remove(); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		for _, p := range processesReferencing(dir) {
			removed = append(removed, "process "+strconv.Itoa(p))
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		// An insecure sandbox's own uid: every process of it, wherever it is.
		l.mu.Lock()
		uidLive := l.uids[m.UID]
		l.mu.Unlock()
		if m.UID >= SandboxUIDBase && m.UID < SandboxUIDBase+SandboxUIDCount && !uidLive && os.Geteuid() == 0 {
			for _, p := range pidsOfUID(m.UID) {
				removed = append(removed, "process "+strconv.Itoa(p))
			}
			if err := killUID(l.setpriv, m.UID, 5*time.Second); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		// 2. network namespace.
		ns := m.Netns
		if ns == "" && m.Secure {
			ns = netnsName(m.ID)
		}
		if ns != "" && l.ip != "" {
			if _, err := os.Stat(filepath.Join(netnsDir, ns)); err == nil {
				if err := deleteNetns(l.ip, ns); err != nil {
					if firstErr == nil {
						firstErr = err
					}
				} else {
					removed = append(removed, "netns "+ns)
				}
			}
		}
		// 3. directory (a tmpfs when a disk limit applied).
		if err := unmountDir(filepath.Join(dir, "dev")); err != nil && firstErr == nil {
			firstErr = err
		}
		if err := unmountDir(dir); err != nil && firstErr == nil {
			firstErr = err
		}
		if err := os.RemoveAll(dir); err != nil {
			if firstErr == nil {
				firstErr = err
			}
		} else {
			removed = append(removed, "dir "+dir)
		}
	}
	if l.cg != nil {
		removed = append(removed, l.cg.sweepEmptyGroups()...)
	}
	return removed, firstErr
}

// ReapStateDir removes what a dead server left in stateDir (see Reap) without
// probing the host or starting anything: for the leftovers of another,
// dead instance. The caller must know that instance is dead (its lock free).
func ReapStateDir(stateDir string) ([]string, error) {
	l := &Linux{stateDir: stateDir, live: map[string]*sandbox{}, cg: detectCgroups()}
	l.ip, _ = exec.LookPath("ip")
	if _, err := os.Stat("/usr/bin/setpriv"); err == nil {
		l.setpriv = "/usr/bin/setpriv"
	}
	return l.Reap()
}
