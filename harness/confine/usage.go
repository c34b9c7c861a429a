package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Usage is what a box's cgroup counted for its command, read when the box
// ends (Close, after the kill): the CPU and the peak memory of every
// process that ever ran in the box, waited for or not (a setsid'd daemon,
// a child that escaped its parent), which a command's rusage misses.
type Usage struct {
	// CPUSeconds: user+system CPU of every process of the box.
	CPUSeconds float64 `json:"cpu_seconds"`
	// PeakMemoryBytes: the largest memory charge of the box's group at any
	// moment (its processes' memory plus the page cache and tmpfs pages
	// they charged: the box's own /tmp, $HOME and /out count).
	PeakMemoryBytes int64 `json:"peak_memory_bytes"`
	// Source names the files read ("cgroup v1: cpuacct.usage, memory.max_usage_in_bytes").
	Source string `json:"source"`
	// Missing says what could not be read and why (that figure is 0).
	Missing []string `json:"missing,omitempty"`
}

// usage reads the group's counters. Call it once the box's processes are
// gone (the figures are then final) and before the groups are removed.
func (cg *cgroup) usage() *Usage {
	u := &Usage{}
	var cpuFile, memFile string
	if cg.v2 {
		d := cg.dirs["freezer"] // v2: one group, every controller's dir the same
		cpuFile, memFile = filepath.Join(d, "cpu.stat"), filepath.Join(d, "memory.peak")
		u.Source = "cgroup v2: cpu.stat usage_usec, memory.peak"
	} else {
		if d, ok := cg.dirs["cpuacct"]; ok {
			cpuFile = filepath.Join(d, "cpuacct.usage")
		}
		if d, ok := cg.dirs["memory"]; ok {
			memFile = filepath.Join(d, "memory.max_usage_in_bytes")
		}
		u.Source = "cgroup v1: cpuacct.usage, memory.max_usage_in_bytes"
	}
	if cpu, err := readCPU(cpuFile); err != nil {
		u.Missing = append(u.Missing, "cpu: "+err.Error())
	} else {
		u.CPUSeconds = cpu
	}
	if mem, err := readInt(memFile); err != nil {
		u.Missing = append(u.Missing, "peak memory: "+err.Error())
	} else {
		u.PeakMemoryBytes = mem
	}
	return u
}

// readCPU reads a group's CPU in seconds: cpuacct.usage (v1, nanoseconds)
// or cpu.stat's usage_usec (v2).
func readCPU(file string) (float64, error) {
	if file == "" {
		return 0, errors.New("no cpuacct controller on this host")
	}
	if filepath.Base(file) == "cpu.stat" {
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
	ns, err := readInt(file)
	return float64(ns) / 1e9, err
}

// readInt reads a file holding one integer.
func readInt(file string) (int64, error) {
	if file == "" {
		return 0, errors.New("no memory controller on this host")
	}
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
