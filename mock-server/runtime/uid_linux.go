//go:build linux

package runtime

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Insecure mode as root (the grader's "uid" confinement level: root inside
// an unprivileged container, no namespaces): each sandbox's agent, and so
// everything it runs, is a uid of its own from [SandboxUIDBase,
// SandboxUIDBase+SandboxUIDCount) (next to harness/confine's 610000+4096,
// disjoint from it: cmd/acceptance's TestBoxAndSandboxUIDRangesAreDisjoint),
// started through setpriv with no groups, no capabilities (bounding and
// inheritable sets empty) and no_new_privs, and with rlimits (prlimit(1)
// lowers them before setpriv switches the uid). Its
// workspace, tmp, home, var and shm are its uid's; its sandbox directory is
// root's with the sandbox's gid, 0750 (no other sandbox gets in); the state
// directory and sandboxes/ are root's, 0711 (traversable, not listable), and
// every directory above them must be searchable by others, or sandboxes run
// as the server's uid and Isolation() says why; meta.json, agent.log and
// execd.sock stay root's 0600. Destroy,
// Quiesce and Reap kill every process of the uid (kill -1 as the uid, then
// a /proc sweep as root). The uid is in meta.json for Reap.

// The uid range of insecure-mode sandboxes.
const (
	SandboxUIDBase  = 620000
	SandboxUIDCount = 4096
)

// rlimits of a uid sandbox's processes (RLIMIT_NPROC counts the uid's
// processes: it bounds the whole sandbox).
const (
	uidNproc  = 1024
	uidNofile = 4096
)

// uidMode says whether insecure sandboxes run as their own uid here, and
// why not.
func (l *Linux) uidMode() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "the server is not root"
	}
	if l.setpriv == "" {
		return false, "setpriv not found (apt-get install -y util-linux)"
	}
	if l.prlimit == "" {
		return false, "prlimit not found (apt-get install -y util-linux)"
	}
	l.pdeathsig = setprivPdeathsig(l.setpriv)
	// A sandbox's uid reaches its directory by path: every directory above
	// it must be searchable by others.
	for d := filepath.Dir(l.stateDir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return false, err.Error()
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return false, fmt.Sprintf("%s (above the state directory) is not searchable by other uids (mode %o)", d, fi.Mode().Perm())
		}
		if d == "/" {
			break
		}
	}
	for _, d := range []string{l.stateDir, filepath.Join(l.stateDir, "sandboxes")} {
		if err := os.Chmod(d, 0o711); err != nil {
			return false, err.Error()
		}
	}
	return true, ""
}

// allocUID picks a free uid: none of this runtime's sandboxes and no live
// process has it. Called with l.mu held.
func (l *Linux) allocUID() (int, error) {
	used := uidsInUse()
	for i := 0; i < SandboxUIDCount; i++ {
		uid := SandboxUIDBase + (l.nextUID+i)%SandboxUIDCount
		if l.uids[uid] || used[uid] {
			continue
		}
		l.nextUID = (l.nextUID + i + 1) % SandboxUIDCount
		l.uids[uid] = true
		return uid, nil
	}
	return 0, fmt.Errorf("runtime: no free sandbox uid in [%d, %d)", SandboxUIDBase, SandboxUIDBase+SandboxUIDCount)
}

// uidsInUse is the set of real uids of live processes.
func uidsInUse() map[int]bool {
	out := map[int]bool{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if uid, ok := procUID(pid); ok {
				out[uid] = true
			}
		}
	}
	return out
}

// procUID is the uid of pid (one of its ids in the sandbox range, else its
// real uid); false for a zombie (it runs nothing; its parent reaps it).
func procUID(pid int) (int, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if st, ok := strings.CutPrefix(sc.Text(), "State:"); ok && strings.HasPrefix(strings.TrimSpace(st), "Z") {
			return 0, false
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			fs := strings.Fields(rest)
			for _, s := range fs { // real, effective, saved, fs: any of them
				if n, err := strconv.Atoi(s); err == nil && n >= SandboxUIDBase && n < SandboxUIDBase+SandboxUIDCount {
					return n, true
				}
			}
			if len(fs) > 0 {
				n, err := strconv.Atoi(fs[0])
				return n, err == nil
			}
		}
	}
	return 0, false
}

// pidsOfUID lists live processes with uid among their ids.
func pidsOfUID(uid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if u, ok := procUID(pid); ok && u == uid {
			out = append(out, pid)
		}
	}
	return out
}

// killUID kills every process of uid: kill(-1) as that uid (no fork race:
// the kernel signals them all), then SIGKILL of each one left, until none
// is left or the timeout passes.
func killUID(setpriv string, uid int, timeout time.Duration) error {
	if uid < SandboxUIDBase || uid >= SandboxUIDBase+SandboxUIDCount {
		return fmt.Errorf("runtime: refusing to kill uid %d (outside the sandbox range)", uid)
	}
	deadline := time.Now().Add(timeout)
	for {
		if setpriv != "" {
			id := strconv.Itoa(uid)
			c := exec.Command(setpriv, "--reuid", id, "--regid", id, "--clear-groups", "--", "/bin/kill", "-KILL", "-1")
			c.Env = []string{"PATH=/usr/bin:/bin"}
			c.Dir = "/"
			_ = c.Run()
		}
		left := pidsOfUID(uid)
		if len(left) == 0 {
			return nil
		}
		killPids(left, syscall.SIGKILL)
		if time.Now().After(deadline) {
			return fmt.Errorf("runtime: processes of uid %d left: %v", uid, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chownTree gives the tree at root to uid (symlinks themselves, never their
// targets).
func chownTree(root string, uid int) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// uidArgv wraps argv so it runs as uid without groups, capabilities or the
// right to gain any. pdeathsig: setpriv can set the parent-death signal
// again after the uid change, which clears the one exec.Cmd set (util-linux
// ≥ 2.33); without it an agent outlives a killed server until Reap.
func uidArgv(setpriv string, pdeathsig bool, uid int, argv []string) []string {
	id := strconv.Itoa(uid)
	out := []string{setpriv, "--reuid", id, "--regid", id, "--clear-groups",
		"--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"}
	if pdeathsig {
		out = append(out, "--pdeathsig", "SIGKILL")
	}
	return append(append(out, "--"), argv...)
}

// setprivPdeathsig says whether setpriv knows --pdeathsig.
func setprivPdeathsig(setpriv string) bool {
	out, _ := exec.Command(setpriv, "--help").CombinedOutput()
	return strings.Contains(string(out), "--pdeathsig")
}

// limitArgv wraps argv in prlimit(1), which lowers its own limits then
// execs argv: the rlimits are in place before setpriv switches the uid (no
// CAP_SYS_RESOURCE needed, as in Docker's default set) and before anything
// of the sandbox runs. A limit is never raised above the server's own.
func limitArgv(prlimit string, fileSize int64, argv []string) []string {
	lims := []struct {
		flag string
		res  int
		n    uint64
	}{{"--nproc", unix.RLIMIT_NPROC, uidNproc}, {"--nofile", unix.RLIMIT_NOFILE, uidNofile}, {"--core", unix.RLIMIT_CORE, 0}}
	if fileSize > 0 {
		lims = append(lims, struct {
			flag string
			res  int
			n    uint64
		}{"--fsize", unix.RLIMIT_FSIZE, uint64(fileSize)})
	}
	out := []string{prlimit}
	for _, l := range lims {
		n := l.n
		var cur unix.Rlimit
		if unix.Getrlimit(l.res, &cur) == nil && cur.Max != unix.RLIM_INFINITY && cur.Max < n {
			n = cur.Max
		}
		out = append(out, fmt.Sprintf("%s=%d:%d", l.flag, n, n))
	}
	return append(append(out, "--"), argv...)
}
