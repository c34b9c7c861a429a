// Package cgroup is the cgroup mechanics the grader's boxes (harness/confine)
// and the bundled server's sandboxes (mock-server/runtime) share: finding the
// hierarchy (v2 unified, or v1 controller mounts), making a group, writing
// its limits, listing, freezing and killing its processes, removing it, and
// reading what it counted.
//
// It is neutral ground: it imports nothing of the project (a rule of
// internal/importrules keeps it so), because the bundled server must import
// nothing of the grader and the grader nothing of the server. Policy stays
// with each user: which controllers it wants, where its groups live, which
// failures are fatal and which only degrade what it enforces.
package cgroup

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

// Root is where the hierarchies are mounted.
const Root = "/sys/fs/cgroup"

// Detect finds the usable controllers below root: the unified (v2)
// hierarchy when it lists controllers (every controller's mount is root;
// "freezer" stands for v2's core cgroup.freeze and cgroup.kill), else each
// of v1Names that is mounted as root/<name>. ctrls is empty when neither.
func Detect(root string, v1Names []string) (v2 bool, ctrls map[string]string) {
	ctrls = map[string]string{}
	if b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err == nil {
		for _, c := range strings.Fields(string(b)) {
			ctrls[c] = root
		}
		ctrls["freezer"] = root
		return true, ctrls
	}
	for _, c := range v1Names {
		d := filepath.Join(root, c)
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			ctrls[c] = d
		}
	}
	return false, ctrls
}

// EnableSubtree (v2) makes the parent group root/parent and lets its
// children use the controllers named in want (those of ctrls only), in
// root's and parent's cgroup.subtree_control. A controller the kernel
// refuses there is left out silently: the limit write that needs it fails
// later and says so. Only making the parent is an error.
func EnableSubtree(root, parent string, ctrls map[string]string, want []string) error {
	if err := os.MkdirAll(filepath.Join(root, parent), 0o755); err != nil {
		return err
	}
	var on []string
	for _, c := range want {
		if _, ok := ctrls[c]; ok {
			on = append(on, "+"+c)
		}
	}
	if len(on) == 0 {
		return nil
	}
	line := []byte(strings.Join(on, " "))
	_ = os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), line, 0o644)
	_ = os.WriteFile(filepath.Join(root, parent, "cgroup.subtree_control"), line, 0o644)
	return nil
}

// Group is one group: one directory per v1 controller, or one v2 group
// (every controller's directory the same).
type Group struct {
	V2   bool
	Dirs map[string]string // controller → group dir
}

// At is the group at path rel below each controller's mount (existing or not).
func At(v2 bool, ctrls map[string]string, rel ...string) *Group {
	g := &Group{V2: v2, Dirs: map[string]string{}}
	for c, mount := range ctrls {
		g.Dirs[c] = filepath.Join(append([]string{mount}, rel...)...)
	}
	return g
}

// Has says whether the group has the controller.
func (g *Group) Has(ctrl string) bool { _, ok := g.Dirs[ctrl]; return ok }

// Unique lists the group's directories once each.
func (g *Group) Unique() []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range g.Dirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// Mkdirs makes the group's directories.
func (g *Group) Mkdirs() error {
	for _, d := range g.Unique() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", d, err)
		}
	}
	return nil
}

// Write writes value to the controller's file of the group.
func (g *Group) Write(ctrl, file, value string) error {
	d, ok := g.Dirs[ctrl]
	if !ok {
		return fmt.Errorf("controller %s not available", ctrl)
	}
	if err := os.WriteFile(filepath.Join(d, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("cgroup %s/%s=%s: %w", ctrl, file, value, err)
	}
	return nil
}

// SetPids caps the group's number of tasks.
func (g *Group) SetPids(n int64) error {
	return g.Write("pids", "pids.max", strconv.FormatInt(n, 10))
}

// SetMemory caps the group's memory charge (memory.max on v2,
// memory.limit_in_bytes on v1).
func (g *Group) SetMemory(bytes int64) error {
	if g.V2 {
		return g.Write("memory", "memory.max", strconv.FormatInt(bytes, 10))
	}
	return g.Write("memory", "memory.limit_in_bytes", strconv.FormatInt(bytes, 10))
}

// NoSwap keeps the group out of swap, as far as the kernel allows: v2
// memory.swap.max 0; v1 swappiness 0 and memory+swap capped at bytes (the
// memory limit) where the kernel has memsw. Best effort: a kernel without
// these files has no swap accounting to close.
func (g *Group) NoSwap(bytes int64) {
	if g.V2 {
		_ = g.Write("memory", "memory.swap.max", "0")
		return
	}
	_ = g.Write("memory", "memory.swappiness", "0")
	if _, err := os.Stat(filepath.Join(g.Dirs["memory"], "memory.memsw.limit_in_bytes")); err == nil {
		_ = g.Write("memory", "memory.memsw.limit_in_bytes", strconv.FormatInt(bytes, 10))
	}
}

// SetCPU caps the group's CPU at milli thousandths of a core (at least
// 0.01 core) per 100 ms period: cpu.max on v2, the CFS period and quota on v1.
func (g *Group) SetCPU(milli int64) error {
	q := max(milli*100, 1000)
	if g.V2 {
		return g.Write("cpu", "cpu.max", fmt.Sprintf("%d 100000", q))
	}
	if err := g.Write("cpu", "cpu.cfs_period_us", "100000"); err != nil {
		return err
	}
	return g.Write("cpu", "cpu.cfs_quota_us", strconv.FormatInt(q, 10))
}

// ProcsFiles are the cgroup.procs files a process joins the group through.
func (g *Group) ProcsFiles() []string {
	var out []string
	for _, d := range g.Unique() {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// Pids lists every process in the group's directories.
func (g *Group) Pids() []int {
	seen := map[int]bool{}
	var out []int
	for _, f := range g.ProcsFiles() {
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

// Freeze stops every process of the group and waits (5 s at most) until the
// kernel says it is frozen.
func (g *Group) Freeze() error {
	if g.V2 {
		if err := g.Write("freezer", "cgroup.freeze", "1"); err != nil {
			return err
		}
		return g.waitFile("freezer", "cgroup.events", "frozen 1")
	}
	if err := g.Write("freezer", "freezer.state", "FROZEN"); err != nil {
		return err
	}
	return g.waitFile("freezer", "freezer.state", "FROZEN")
}

// Thaw lets the group's processes run again.
func (g *Group) Thaw() error {
	if g.V2 {
		return g.Write("freezer", "cgroup.freeze", "0")
	}
	return g.Write("freezer", "freezer.state", "THAWED")
}

func (g *Group) waitFile(ctrl, file, want string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(g.Dirs[ctrl], file))
		if err == nil && strings.Contains(string(b), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s/%s did not reach %q (now %q)", ctrl, file, want, strings.TrimSpace(string(b)))
		}
		// v1 needs the state re-written to make progress on busy groups.
		if !g.V2 && ctrl == "freezer" {
			_ = g.Write("freezer", "freezer.state", "FROZEN")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Kill SIGKILLs every process of the group until it is empty, however the
// processes were started: cgroup.kill first on v2; then rounds of SIGKILL
// to every member, thawing the group after each so the signals land. With
// freezeEachRound (v1 only) each round freezes the group first, so nothing
// forks between the listing and the signals. It gives up after timeout and
// returns the processes still there (none: nil). Pid 1 and this process
// are never signalled.
func (g *Group) Kill(timeout time.Duration, freezeEachRound bool) []int {
	if g.V2 {
		_ = g.Write("freezer", "cgroup.kill", "1")
	}
	canFreeze := g.Has("freezer")
	freeze := freezeEachRound && canFreeze && !g.V2
	deadline := time.Now().Add(timeout)
	for {
		if freeze {
			_ = g.Write("freezer", "freezer.state", "FROZEN")
		}
		p := g.Pids()
		if len(p) == 0 {
			if freeze {
				_ = g.Thaw()
			}
			return nil
		}
		for _, pid := range p {
			if pid > 1 && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if canFreeze {
			_ = g.Thaw()
		}
		if time.Now().After(deadline) {
			return p
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Remove deletes the group's (empty) directories, retrying for half a
// second while the kernel still counts exiting members; a missing one is
// fine.
func (g *Group) Remove() error {
	var errs []error
	for _, d := range g.Unique() {
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
