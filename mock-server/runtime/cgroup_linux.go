//go:build linux

package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/internal/cgroup"
)

// cgroupRoot is where cgroup hierarchies are mounted.
const cgroupRoot = cgroup.Root

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

// detectCgroups finds cgroup v1 controllers (memory, pids, cpu, freezer,
// devices) or a pure cgroup v2 hierarchy. It returns nil when neither is
// usable.
func detectCgroups() *cgroups {
	v2, ctrls := cgroup.Detect(cgroupRoot, []string{"memory", "pids", "cpu", "freezer", "devices"})
	if len(ctrls) == 0 {
		return nil
	}
	return &cgroups{v2: v2, ctrls: ctrls}
}

func (c *cgroups) has(ctrl string) bool {
	if c == nil {
		return false
	}
	_, ok := c.ctrls[ctrl]
	return ok
}

// sandboxCgroup is one sandbox's group(s); internal/cgroup holds the
// mechanics shared with the grader's boxes. Its remove, not the embedded
// Group's Remove, also removes the shared parent group once empty.
type sandboxCgroup struct {
	*cgroup.Group
	id string
	// owner and group: the shared parent group (Spec.Group) it lives in, removed once empty
	owner *cgroups
	group string
}

// sandboxIn is the group of sandbox id inside the parent group (none: ""),
// existing or not.
func (c *cgroups) sandboxIn(group, id string) *sandboxCgroup {
	return &sandboxCgroup{Group: &cgroup.Group{V2: c.v2, Dirs: c.dirsIn(group, id)}, id: id, owner: c, group: group}
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
	sc := c.sandboxIn(group, id)
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
		if err := cgroup.EnableSubtree(cgroupRoot, cgroupParent, c.ctrls, []string{"memory", "pids", "cpu"}); err != nil {
			return nil, fmt.Errorf("cgroup v2: %w", err)
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
			pg := c.sandboxIn("", group)
			if err := pg.Mkdirs(); err != nil {
				return err
			}
			if !c.v2 {
				_ = pg.Write("memory", "memory.use_hierarchy", "1") // children count against it (already so on current kernels)
			} else if len(want) > 0 {
				_ = os.WriteFile(filepath.Join(pg.Dirs["memory"], "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0o644)
			}
			if err := pg.apply(gl); err != nil {
				return err
			}
			if err := sc.Mkdirs(); err != nil {
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
	} else if err := sc.Mkdirs(); err != nil {
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

// apply writes the limits l sets (a zero field: no limit), and keeps the
// group out of swap when it caps memory.
func (sc *sandboxCgroup) apply(l Limits) error {
	if l.MemoryBytes > 0 {
		if err := sc.SetMemory(l.MemoryBytes); err != nil {
			return err
		}
		sc.NoSwap(l.MemoryBytes)
	}
	if l.Pids > 0 {
		if err := sc.SetPids(l.Pids); err != nil {
			return err
		}
	}
	if l.CPUMilli > 0 {
		if err := sc.SetCPU(l.CPUMilli); err != nil {
			return err
		}
	}
	return nil
}

func (sc *sandboxCgroup) hasDevices() bool { return sc.Has("devices") && !sc.V2 }

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
	if err := sc.Write("devices", "devices.deny", "a"); err != nil {
		return err
	}
	for _, r := range deviceRules {
		if err := sc.Write("devices", "devices.allow", r); err != nil {
			return err
		}
	}
	return nil
}

func (sc *sandboxCgroup) canFreeze() bool { return sc.Has("freezer") }

// killAll SIGKILLs every member until the groups are empty (thawing them so
// the signals are delivered). It gives up after timeout.
func (sc *sandboxCgroup) killAll(timeout time.Duration) error {
	if p := sc.Kill(timeout, false); len(p) > 0 {
		return fmt.Errorf("processes %v survive in cgroup %s", p, sc.id)
	}
	return nil
}

// remove deletes the groups (they must be empty), then the shared parent
// group once no sandbox is left in it. Missing groups are fine.
func (sc *sandboxCgroup) remove() error {
	err := sc.Remove()
	if sc.group != "" && sc.owner != nil && err == nil {
		sc.owner.groupMu.Lock()
		sc.owner.removeGroupLocked(sc.group)
		sc.owner.groupMu.Unlock()
	}
	return err
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
