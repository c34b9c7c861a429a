package confine

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The grader's own descriptors. Every box's forwarded connections live in
// the grader's process (the forwarder, the guard, and often the stubs and
// the bundled server too), so all boxes together must leave the grader a
// reserve for its own work (copying a submission in, its bundle, its
// servers' other clients).
//
// At the first box the grader raises its soft RLIMIT_NOFILE to its hard
// limit (Go's runtime does the same at start since Go 1.19; this makes it
// explicit). Then the boxes of the process hold at most
// (limit - reserve) / 3 forwarded connections together (each costs the
// grader up to three descriptors: the box's side, the dial upstream, and
// the upstream's accepted side when that server lives in the grader: the
// stubs, the scripted model, the bundled server), where
// reserve is a quarter of the limit and at least MinGraderReserve. A
// connection past that is closed and recorded in its box's Status.Broken:
// the grader's limit, never the box's fault.

// MinGraderReserve is the least number of descriptors boxes leave the grader.
const MinGraderReserve = 1024

var (
	fdOnce   sync.Once
	fdLimit  uint64
	fdBudget int64        // forwarded connections all boxes may hold
	fdInUse  atomic.Int64 // forwarded connections held now
)

// GraderNoFile raises the grader's soft RLIMIT_NOFILE to its hard limit
// (once) and says the limit and the descriptors kept in reserve.
func GraderNoFile() (limit, reserve uint64) {
	fdOnce.Do(func() {
		var rl unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil {
			if rl.Cur < rl.Max {
				want := rl
				want.Cur = rl.Max
				if unix.Setrlimit(unix.RLIMIT_NOFILE, &want) == nil {
					rl = want
				}
			}
			fdLimit = rl.Cur
		}
		if fdLimit == 0 || fdLimit > 1<<30 {
			fdLimit = 1 << 20 // unlimited or unreadable: a bound all the same
		}
		r := graderReserve(fdLimit)
		if fdLimit > r {
			fdBudget = int64((fdLimit - r) / 3)
		}
	})
	return fdLimit, graderReserve(fdLimit)
}

func graderReserve(limit uint64) uint64 {
	r := limit / 4
	if r < MinGraderReserve {
		r = MinGraderReserve
	}
	return r
}

// takeGraderFDs takes one forwarded connection's share of the grader's
// descriptors; false when the reserve would be touched. Put it back with
// releaseGraderFDs.
func takeGraderFDs() bool {
	GraderNoFile()
	if fdInUse.Add(1) > fdBudget {
		fdInUse.Add(-1)
		return false
	}
	return true
}

func releaseGraderFDs() { fdInUse.Add(-1) }
