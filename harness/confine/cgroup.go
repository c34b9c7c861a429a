package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the hierarchies are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// cgroupParent is the grader's parent group below each controller.
const cgroupParent = "acceptance-confine"

// cgroup is one box's group: one directory per v1 controller, or one v2 group.
type cgroup struct {
	v2   bool
	dirs map[string]string // controller → group dir (v2: all the same)
}

// detectControllers lists the usable controllers: v2 when the unified
// hierarchy has controllers, else the v1 mounts.
func detectControllers() (v2 bool, ctrls map[string]string) {
	ctrls = map[string]string{}
	if b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		for _, c := range strings.Fields(string(b)) {
			ctrls[c] = cgroupRoot
		}
		ctrls["freezer"] = cgroupRoot // cgroup.freeze and cgroup.kill are core in v2
		return true, ctrls
	}
	for _, c := range []string{"memory", "pids", "cpu", "cpuacct", "freezer"} { // cpuacct: Usage
		d := filepath.Join(cgroupRoot, c)
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			ctrls[c] = d
		}
	}
	return false, ctrls
}

// newCgroup makes the box's groups and applies the limits. A controller
// that is missing is reported (the box is partial), not fatal; none at all
// is an error.
func newCgroup(name string, l Limits, st *Status) (*cgroup, error) {
	v2, ctrls := detectControllers()
	if len(ctrls) == 0 {
		return nil, errors.New("no cgroup controller is mounted at " + cgroupRoot)
	}
	cg := &cgroup{v2: v2, dirs: map[string]string{}}
	if v2 {
		parent := filepath.Join(cgroupRoot, cgroupParent)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, err
		}
		var want []string
		for _, c := range []string{"memory", "pids", "cpu"} {
			if _, ok := ctrls[c]; ok {
				want = append(want, "+"+c)
			}
		}
		_ = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0o644)
		_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0o644)
	}
	for c, mount := range ctrls {
		cg.dirs[c] = filepath.Join(mount, cgroupParent, name)
	}
	for _, d := range cg.unique() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			cg.remove()
			return nil, fmt.Errorf("create cgroup %s: %w", d, err)
		}
	}
	for _, c := range []string{"pids", "memory", "cpu", "freezer"} {
		if _, ok := cg.dirs[c]; !ok {
			st.degrade("cgroup "+c, errors.New("controller not available on this host"))
		}
	}
	lim := []struct{ ctrl, v1file, v2file, value, what string }{
		{"pids", "pids.max", "pids.max", strconv.FormatInt(l.Pids, 10), fmt.Sprintf("pids ≤ %d", l.Pids)},
		{"memory", "memory.limit_in_bytes", "memory.max", strconv.FormatInt(l.MemoryBytes, 10), fmt.Sprintf("memory ≤ %d MiB", l.MemoryBytes>>20)},
	}
	for _, x := range lim {
		if _, ok := cg.dirs[x.ctrl]; !ok {
			continue
		}
		f := x.v1file
		if v2 {
			f = x.v2file
		}
		if err := cg.write(x.ctrl, f, x.value); err != nil {
			st.degrade("cgroup "+x.ctrl+" limit", err)
		} else {
			st.enforce(x.what)
		}
	}
	if _, ok := cg.dirs["memory"]; ok {
		if v2 {
			_ = cg.write("memory", "memory.swap.max", "0")
		} else {
			_ = cg.write("memory", "memory.swappiness", "0")
			_ = cg.write("memory", "memory.memsw.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10))
		}
	}
	if _, ok := cg.dirs["cpu"]; ok {
		q := max(l.CPUMilli*100, 1000)
		var err error
		if v2 {
			err = cg.write("cpu", "cpu.max", fmt.Sprintf("%d 100000", q))
		} else if err = cg.write("cpu", "cpu.cfs_period_us", "100000"); err == nil {
			err = cg.write("cpu", "cpu.cfs_quota_us", strconv.FormatInt(q, 10))
		}
		if err != nil {
			st.degrade("cgroup cpu limit", err)
		} else {
			st.enforce(fmt.Sprintf("cpu ≤ %d.%03d cores", l.CPUMilli/1000, l.CPUMilli%1000))
		}
	}
	return cg, nil
}

func (cg *cgroup) unique() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range cg.dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

func (cg *cgroup) write(ctrl, file, value string) error {
	d, ok := cg.dirs[ctrl]
	if !ok {
		return fmt.Errorf("controller %s not available", ctrl)
	}
	if err := os.WriteFile(filepath.Join(d, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("cgroup %s/%s=%s: %w", ctrl, file, value, err)
	}
	return nil
}

// procsFiles are the cgroup.procs files a process joins the box through.
func (cg *cgroup) procsFiles() []string {
	var out []string
	for _, d := range cg.unique() {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// pids lists every process in the box's groups.
func (cg *cgroup) pids() []int {
	seen := map[int]bool{}
	var out []int
	for _, f := range cg.procsFiles() {
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

// kill ends every process of the box, however it was started: cgroup.kill
// on v2; on v1 freeze (so nothing forks meanwhile), SIGKILL every member,
// thaw so the signals land, until the groups are empty. It returns how
// many processes were still there after timeout.
func (cg *cgroup) kill(timeout time.Duration) int {
	if cg.v2 {
		_ = cg.write("freezer", "cgroup.kill", "1")
	}
	_, canFreeze := cg.dirs["freezer"]
	deadline := time.Now().Add(timeout)
	for {
		if canFreeze && !cg.v2 {
			_ = cg.write("freezer", "freezer.state", "FROZEN")
		}
		p := cg.pids()
		if len(p) == 0 {
			if canFreeze && !cg.v2 {
				_ = cg.write("freezer", "freezer.state", "THAWED")
			}
			return 0
		}
		for _, pid := range p {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if canFreeze && !cg.v2 {
			_ = cg.write("freezer", "freezer.state", "THAWED")
		}
		if time.Now().After(deadline) {
			return len(p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// remove deletes the (empty) groups; missing ones are fine.
func (cg *cgroup) remove() error {
	var errs []error
	for _, d := range cg.unique() {
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
	return errors.Join(errs...)
}
