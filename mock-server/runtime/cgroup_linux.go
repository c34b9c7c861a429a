//go:build linux

package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cgroupRoot is where cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupParent is the per-server parent group below each controller.
const cgroupParent = "osb"

// cgroups knows which controllers this host offers.
type cgroups struct {
	v2    bool
	ctrls map[string]string // v1: controller → its mount dir; v2: "" → unified root
	// groupMu orders making a sandbox's group inside a shared parent group
	// against removing that parent once empty.
	groupMu sync.Mutex
}

// detectCgroups finds cgroup v1 controllers (memory, pids, cpu, freezer) or a
// pure cgroup v2 hierarchy. It returns nil when neither is usable.
func detectCgroups() *cgroups {
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		b, _ := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
		c := &cgroups{v2: true, ctrls: map[string]string{}}
		for _, name := range strings.Fields(string(b)) {
			c.ctrls[name] = cgroupRoot
		}
		c.ctrls["freezer"] = cgroupRoot // cgroup.freeze is core in v2
		return c
	}
	c := &cgroups{ctrls: map[string]string{}}
	for _, name := range []string{"memory", "pids", "cpu", "freezer", "devices"} {
		dir := filepath.Join(cgroupRoot, name)
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
			c.ctrls[name] = dir
		}
	}
	if len(c.ctrls) == 0 {
		return nil
	}
	return c
}

func (c *cgroups) has(ctrl string) bool {
	if c == nil {
		return false
	}
	_, ok := c.ctrls[ctrl]
	return ok
}

// sandboxCgroup is one sandbox's group(s).
type sandboxCgroup struct {
	v2   bool
	id   string
	dirs map[string]string // controller → group dir (v2: all the same)
	// owner and group: the shared parent group (Spec.Group) it lives in, removed once empty
	owner *cgroups
	group string
}

// dirsFor lists the group directories of id (existing or not).
func (c *cgroups) dirsFor(id string) map[string]string { return c.dirsIn("", id) }

// dirsIn lists the group directories of id inside the parent group (none: "").
func (c *cgroups) dirsIn(group, id string) map[string]string {
	out := map[string]string{}
	for name, mount := range c.ctrls {
		out[name] = filepath.Join(mount, cgroupParent, group, id)
	}
	return out
}

// create makes the groups for a sandbox and applies limits. Limits a
// controller cannot take are reported in the returned error list (not fatal).
func (c *cgroups) create(id string, l Limits) (*sandboxCgroup, error) {
	return c.createIn("", Limits{}, id, l)
}

// createIn is create inside the parent group (made, and limited by gl, when
// it does not exist yet; gl is applied again each time: one tenant, one quota).
func (c *cgroups) createIn(group string, gl Limits, id string, l Limits) (*sandboxCgroup, error) {
	sc := &sandboxCgroup{v2: c.v2, id: id, dirs: c.dirsIn(group, id), owner: c, group: group}
	if group != "" && gl.CPUMilli > 0 && l.CPUMilli > gl.CPUMilli {
		l.CPUMilli = gl.CPUMilli // cgroup v1 refuses a child's CFS quota above its parent's (EINVAL)
	}
	want := []string{}
	for _, ctrl := range []string{"memory", "pids", "cpu"} {
		if _, ok := c.ctrls[ctrl]; ok {
			want = append(want, "+"+ctrl)
		}
	}
	if c.v2 {
		parent := filepath.Join(cgroupRoot, cgroupParent)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup v2: %w", err)
		}
		if len(want) > 0 {
			_ = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0o644)
			_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0o644)
		}
	}
	if group != "" {
		if !idRE.MatchString(group) {
			return nil, fmt.Errorf("cgroup: bad group name %q", group)
		}
		// The group and the sandbox's group in it are made under groupMu:
		// this server never removes the group in between.
		c.groupMu.Lock()
		err := func() error {
			pg := &sandboxCgroup{v2: c.v2, id: group, dirs: c.dirsFor(group)}
			seen := map[string]bool{}
			for _, d := range pg.dirs {
				if seen[d] {
					continue
				}
				seen[d] = true
				if err := os.MkdirAll(d, 0o755); err != nil {
					return fmt.Errorf("create cgroup %s: %w", d, err)
				}
			}
			if !c.v2 {
				_ = pg.write("memory", "memory.use_hierarchy", "1") // children count against it (already so on current kernels)
			} else if len(want) > 0 {
				_ = os.WriteFile(filepath.Join(pg.dirs["memory"], "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0o644)
			}
			if err := pg.apply(gl); err != nil {
				return err
			}
			if err := sc.mkdirs(); err != nil {
				return err
			}
			// Applied again now that the group holds a sandbox (it can no
			// longer be removed): had another server's sweep removed the
			// empty group meanwhile, MkdirAll made it again without limits.
			return pg.apply(gl)
		}()
		c.groupMu.Unlock()
		if err != nil {
			_ = sc.remove() // the sandbox's group, and the tenant's when empty
			return nil, err
		}
	} else if err := sc.mkdirs(); err != nil {
		_ = sc.remove()
		return nil, err
	}
	if err := sc.apply(l); err != nil {
		sc.remove()
		return nil, err
	}
	if err := sc.applyDevices(); err != nil {
		sc.remove()
		return nil, err
	}
	return sc, nil
}

// mkdirs makes the sandbox's group directories.
func (sc *sandboxCgroup) mkdirs() error {
	seen := map[string]bool{}
	for _, d := range sc.dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", d, err)
		}
	}
	return nil
}

// sweepEmptyGroups removes the tenant groups (Spec.Group) that hold no
// sandbox and were made more than a minute ago: what a server that died
// between a sandbox's removal and its group's left. A group in use is kept
// (rmdir refuses it).
func (c *cgroups) sweepEmptyGroups() []string {
	if c == nil {
		return nil
	}
	c.groupMu.Lock()
	defer c.groupMu.Unlock()
	var removed []string
	seen := map[string]bool{}
	for ctrl, mount := range c.ctrls {
		dirs, _ := filepath.Glob(filepath.Join(mount, cgroupParent, "t-*"))
		for _, d := range dirs {
			if seen[d] {
				continue
			}
			seen[d] = true
			if st, err := os.Stat(d); err != nil || !st.IsDir() || time.Since(st.ModTime()) < time.Minute {
				continue
			}
			if syscall.Rmdir(d) == nil {
				removed = append(removed, fmt.Sprintf("cgroup %s:%s", ctrl, d))
			}
		}
	}
	return removed
}

func (sc *sandboxCgroup) write(ctrl, file, value string) error {
	d, ok := sc.dirs[ctrl]
	if !ok {
		return fmt.Errorf("controller %s not available", ctrl)
	}
	if err := os.WriteFile(filepath.Join(d, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("cgroup %s/%s=%s: %w", ctrl, file, value, err)
	}
	return nil
}

func (sc *sandboxCgroup) apply(l Limits) error {
	if sc.v2 {
		if l.MemoryBytes > 0 {
			if err := sc.write("memory", "memory.max", strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
				return err
			}
			_ = sc.write("memory", "memory.swap.max", "0")
		}
		if l.Pids > 0 {
			if err := sc.write("pids", "pids.max", strconv.FormatInt(l.Pids, 10)); err != nil {
				return err
			}
		}
		if l.CPUMilli > 0 {
			q := max(l.CPUMilli*100, 1000)
			if err := sc.write("cpu", "cpu.max", fmt.Sprintf("%d 100000", q)); err != nil {
				return err
			}
		}
		return nil
	}
	if l.MemoryBytes > 0 {
		_ = sc.write("memory", "memory.swappiness", "0")
		if err := sc.write("memory", "memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10)); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(sc.dirs["memory"], "memory.memsw.limit_in_bytes")); err == nil {
			_ = sc.write("memory", "memory.memsw.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10))
		}
	}
	if l.Pids > 0 {
		if err := sc.write("pids", "pids.max", strconv.FormatInt(l.Pids, 10)); err != nil {
			return err
		}
	}
	if l.CPUMilli > 0 {
		if err := sc.write("cpu", "cpu.cfs_period_us", "100000"); err != nil {
			return err
		}
		q := max(l.CPUMilli*100, 1000)
		if err := sc.write("cpu", "cpu.cfs_quota_us", strconv.FormatInt(q, 10)); err != nil {
			return err
		}
	}
	return nil
}

// procsFiles lists the cgroup.procs files a new process must be written to.
func (sc *sandboxCgroup) procsFiles() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range sc.dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, filepath.Join(d, "cgroup.procs"))
		}
	}
	return out
}

// pids lists every process in the sandbox's groups.
func (sc *sandboxCgroup) pids() []int {
	seen := map[int]bool{}
	var out []int
	for _, f := range sc.procsFiles() {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(s); err == nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

func (sc *sandboxCgroup) hasDevices() bool { _, ok := sc.dirs["devices"]; return ok && !sc.v2 }

// deviceRules is the devices cgroup (v1) of a sandbox, as Docker's default:
// any device node may be created (mknod) but only these may be opened.
var deviceRules = []string{
	"c *:* m", "b *:* m",
	"c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm", // null zero full random urandom
	"c 5:0 rwm", "c 5:1 rwm", "c 5:2 rwm", "c 136:* rwm", // tty console ptmx pts
}

func (sc *sandboxCgroup) applyDevices() error {
	if !sc.hasDevices() {
		return nil
	}
	if err := sc.write("devices", "devices.deny", "a"); err != nil {
		return err
	}
	for _, r := range deviceRules {
		if err := sc.write("devices", "devices.allow", r); err != nil {
			return err
		}
	}
	return nil
}

func (sc *sandboxCgroup) canFreeze() bool { _, ok := sc.dirs["freezer"]; return ok }

// freeze stops every process and waits until the kernel says FROZEN.
func (sc *sandboxCgroup) freeze() error {
	if sc.v2 {
		if err := sc.write("freezer", "cgroup.freeze", "1"); err != nil {
			return err
		}
		return sc.waitFile("freezer", "cgroup.events", "frozen 1")
	}
	if err := sc.write("freezer", "freezer.state", "FROZEN"); err != nil {
		return err
	}
	return sc.waitFile("freezer", "freezer.state", "FROZEN")
}

func (sc *sandboxCgroup) thaw() error {
	if sc.v2 {
		return sc.write("freezer", "cgroup.freeze", "0")
	}
	return sc.write("freezer", "freezer.state", "THAWED")
}

func (sc *sandboxCgroup) waitFile(ctrl, file, want string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(sc.dirs[ctrl], file))
		if err == nil && strings.Contains(string(b), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s/%s did not reach %q (now %q)", ctrl, file, want, strings.TrimSpace(string(b)))
		}
		// v1 needs the state re-written to make progress on busy groups.
		if !sc.v2 && ctrl == "freezer" {
			_ = sc.write("freezer", "freezer.state", "FROZEN")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killAll SIGKILLs every member until the groups are empty (thawing them so
// the signals are delivered). It gives up after timeout.
func (sc *sandboxCgroup) killAll(timeout time.Duration) error {
	if sc.v2 {
		_ = sc.write("freezer", "cgroup.kill", "1")
	}
	deadline := time.Now().Add(timeout)
	for {
		p := sc.pids()
		if len(p) == 0 {
			return nil
		}
		killPids(p, syscall.SIGKILL)
		if sc.canFreeze() {
			_ = sc.thaw()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v survive in cgroup %s", p, sc.id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// remove deletes the groups (they must be empty). Missing groups are fine.
func (sc *sandboxCgroup) remove() error {
	var errs []error
	seen := map[string]bool{}
	for _, d := range sc.dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		var err error
		for i := 0; i < 50; i++ {
			err = syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	if sc.group != "" && sc.owner != nil && len(errs) == 0 {
		sc.owner.groupMu.Lock()
		sc.owner.removeGroupLocked(sc.group)
		sc.owner.groupMu.Unlock()
	}
	return errors.Join(errs...)
}

// removeGroupLocked removes a parent group once no sandbox group is left in
// it (one still in use stays: rmdir refuses it). Caller holds groupMu.
func (c *cgroups) removeGroupLocked(group string) {
	if group == "" {
		return
	}
	for _, d := range c.dirsFor(group) {
		_ = syscall.Rmdir(d)
	}
}
