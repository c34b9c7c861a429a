package confine

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

// usageOf reads the group's counters. Call it once the box's processes are
// gone (the figures are then final) and before the groups are removed.
func usageOf(cg *cgroup) *Usage {
	u := &Usage{Source: cg.UsageSource()}
	if cpu, err := cg.CPUSeconds(); err != nil {
		u.Missing = append(u.Missing, "cpu: "+err.Error())
	} else {
		u.CPUSeconds = cpu
	}
	if mem, err := cg.PeakMemory(); err != nil {
		u.Missing = append(u.Missing, "peak memory: "+err.Error())
	} else {
		u.PeakMemoryBytes = mem
	}
	return u
}
