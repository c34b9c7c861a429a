package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// UsageSource names the files CPUSeconds and PeakMemory read.
func (g *Group) UsageSource() string {
	if g.V2 {
		return "cgroup v2: cpu.stat usage_usec, memory.peak"
	}
	return "cgroup v1: cpuacct.usage, memory.max_usage_in_bytes"
}

// CPUSeconds reads the user+system CPU of every process that ran in the
// group: cpu.stat's usage_usec (v2) or cpuacct.usage (v1, nanoseconds).
func (g *Group) CPUSeconds() (float64, error) {
	if g.V2 {
		file := filepath.Join(g.Dirs["freezer"], "cpu.stat") // v2: one group, every controller's dir the same
		b, err := os.ReadFile(file)
		if err != nil {
			return 0, err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
				us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("%s: %w", file, err)
				}
				return float64(us) / 1e6, nil
			}
		}
		return 0, fmt.Errorf("%s has no usage_usec", file)
	}
	d, ok := g.Dirs["cpuacct"]
	if !ok {
		return 0, errors.New("no cpuacct controller on this host")
	}
	ns, err := readInt(filepath.Join(d, "cpuacct.usage"))
	return float64(ns) / 1e9, err
}

// PeakMemory reads the group's largest memory charge at any moment:
// memory.peak (v2) or memory.max_usage_in_bytes (v1).
func (g *Group) PeakMemory() (int64, error) {
	if g.V2 {
		return readInt(filepath.Join(g.Dirs["freezer"], "memory.peak"))
	}
	d, ok := g.Dirs["memory"]
	if !ok {
		return 0, errors.New("no memory controller on this host")
	}
	return readInt(filepath.Join(d, "memory.max_usage_in_bytes"))
}

// readInt reads a file holding one integer.
func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("%s does not exist on this kernel", filepath.Base(file))
		}
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return v, nil
}
