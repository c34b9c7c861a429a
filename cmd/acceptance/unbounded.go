package main

import (
	mockserver "github.com/osb-capstone/acceptance/mock-server"
	osbruntime "github.com/osb-capstone/acceptance/mock-server/runtime"
)

// benchUnbounded, when set, turns issue 26's bounds off for the grades of
// this process: the boxes' (confine.Config.Unbounded) and the bundled
// server's (its server func). Only BenchmarkGradeProtections sets it, to
// measure their cost side by side; the binary never does.
var benchUnbounded *unboundedGrade

// unboundedGrade is what benchUnbounded turns off.
type unboundedGrade struct {
	// volumeRoot holds named volumes (a directory of the benchmark's own:
	// never the machine-wide root).
	volumeRoot string
	// keepBoxes, keepServer leave the boxes' or the bundled server's
	// bounds on (to tell which side a difference comes from).
	keepBoxes, keepServer bool
}

// boxes says whether the boxes' bounds are off.
func (u *unboundedGrade) boxes() bool { return u != nil && !u.keepBoxes }

// server turns the bundled server's bounds off: no default sandbox limits,
// no tenant quota (and so no tenant cgroup), named volumes as plain
// directories under volumeRoot.
func (u *unboundedGrade) server(c *mockserver.BundledConfig) {
	if u.keepServer {
		return
	}
	c.PrivateVolumes = false
	c.VolumeRoot = u.volumeRoot
	c.VolumeQuotaBytes = -1
	c.DefaultLimits = osbruntime.Limits{CPUMilli: -1, MemoryBytes: -1, Pids: -1}
	c.TenantQuota = mockserver.Quota{Sandboxes: -1, CPUMilli: -1, MemoryBytes: -1, Pids: -1}
}
