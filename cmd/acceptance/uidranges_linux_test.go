//go:build linux

package main

import (
	"testing"

	"github.com/osb-capstone/acceptance/harness/confine"
	osbruntime "github.com/osb-capstone/acceptance/mock-server/runtime"
)

// TestBoxAndSandboxUIDRangesAreDisjoint: the uids harness/confine gives the
// grader's boxes and those the bundled server's runtime gives its
// insecure-mode sandboxes (both on one machine when the grader runs the
// bundled server at confinement level uid) are two ranges apart, end to end:
// no uid of either range is the other's, so a sandbox never runs as a box's
// uid (its files, its processes), and killing every process of one's uid
// never kills the other's. The two packages may not import each other; the
// command imports both, so this test reads their constants.
func TestBoxAndSandboxUIDRangesAreDisjoint(t *testing.T) {
	type uidRange struct {
		name        string
		base, count int
	}
	boxes := uidRange{"harness/confine's boxes (DefaultUIDBase, DefaultUIDCount)", confine.DefaultUIDBase, confine.DefaultUIDCount}
	sandboxes := uidRange{"the bundled server's uid sandboxes (SandboxUIDBase, SandboxUIDCount)", osbruntime.SandboxUIDBase, osbruntime.SandboxUIDCount}
	for _, r := range []uidRange{boxes, sandboxes} {
		if r.base <= 0 || r.count <= 0 {
			t.Fatalf("%s: [%d, %d) is not a range of uids other than root's", r.name, r.base, r.base+r.count)
		}
	}
	// [a, a+n) and [b, b+m) share a uid when each starts before the other ends.
	if boxes.base < sandboxes.base+sandboxes.count && sandboxes.base < boxes.base+boxes.count {
		t.Errorf("%s [%d, %d) and %s [%d, %d) share uids", boxes.name, boxes.base, boxes.base+boxes.count,
			sandboxes.name, sandboxes.base, sandboxes.base+sandboxes.count)
	}
}
