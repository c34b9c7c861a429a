package confine

import (
	"errors"
	"fmt"
	"time"

	cgroups "github.com/osb-capstone/acceptance/internal/cgroup"
)

// cgroupRoot is where the hierarchies are mounted.
var cgroupRoot = cgroups.Root

// cgroupParent is the grader's parent group below each controller.
const cgroupParent = "acceptance-confine"

// cgroup is one box's group: one directory per v1 controller, or one v2
// group; internal/cgroup holds the mechanics shared with the bundled server.
type cgroup = cgroups.Group

// detectControllers lists the usable controllers: v2 when the unified
// hierarchy has controllers, else the v1 mounts (cpuacct: Usage).
func detectControllers() (v2 bool, ctrls map[string]string) {
	return cgroups.Detect(cgroupRoot, []string{"memory", "pids", "cpu", "cpuacct", "freezer"})
}

// newCgroup makes the box's groups and applies the limits. A controller
// that is missing is reported (the box is partial), not fatal; none at all
// is an error.
func newCgroup(name string, l Limits, st *Status) (*cgroup, error) {
	v2, ctrls := detectControllers()
	if len(ctrls) == 0 {
		return nil, errors.New("no cgroup controller is mounted at " + cgroupRoot)
	}
	if v2 {
		if err := cgroups.EnableSubtree(cgroupRoot, cgroupParent, ctrls, []string{"memory", "pids", "cpu"}); err != nil {
			return nil, err
		}
	}
	cg := cgroups.At(v2, ctrls, cgroupParent, name)
	if err := cg.Mkdirs(); err != nil {
		cg.Remove()
		return nil, err
	}
	for _, c := range []string{"pids", "memory", "cpu", "freezer"} {
		if !cg.Has(c) {
			st.degrade("cgroup "+c, errors.New("controller not available on this host"))
		}
	}
	lim := []struct {
		ctrl string
		set  func() error
		what string
	}{
		{"pids", func() error { return cg.SetPids(l.Pids) }, fmt.Sprintf("pids ≤ %d", l.Pids)},
		{"memory", func() error { return cg.SetMemory(l.MemoryBytes) }, fmt.Sprintf("memory ≤ %d MiB", l.MemoryBytes>>20)},
	}
	for _, x := range lim {
		if !cg.Has(x.ctrl) {
			continue
		}
		if err := x.set(); err != nil {
			st.degrade("cgroup "+x.ctrl+" limit", err)
		} else {
			st.enforce(x.what)
		}
	}
	if cg.Has("memory") {
		cg.NoSwap(l.MemoryBytes)
	}
	if cg.Has("cpu") {
		if err := cg.SetCPU(l.CPUMilli); err != nil {
			st.degrade("cgroup cpu limit", err)
		} else {
			st.enforce(fmt.Sprintf("cpu ≤ %d.%03d cores", l.CPUMilli/1000, l.CPUMilli%1000))
		}
	}
	return cg, nil
}

// killCgroup ends every process of the box, however it was started:
// cgroup.kill on v2; on v1 freeze (so nothing forks meanwhile), SIGKILL
// every member, thaw so the signals land, until the groups are empty. It
// returns how many processes were still there after the timeout.
func killCgroup(cg *cgroup, timeout time.Duration) int {
	return len(cg.Kill(timeout, true))
}
