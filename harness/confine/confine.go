// Package confine runs one submission command in a confinement of its own:
// an unprivileged uid no other command holds, its own PID, mount, IPC, UTS
// and network namespaces (bubblewrap inside a network namespace the grader
// made), the host's system read-only, a private writable copy of the
// submission, private /tmp, $HOME and {out} on a size-capped tmpfs, a cgroup
// with pids, memory and CPU limits, and a network that reaches only the
// ports an allow-callback names (every other connection refused and
// recorded). Its outputs are copied out after it exits (CopyOut).
//
// What a box costs the grader is bounded per box, so one box never runs the
// grader out of anything the others need:
//   - descriptors: the box's processes get RLIMIT_NOFILE Limits.NoFile
//     (hard and soft); the grader's own forwarder and guard hold at most
//     Limits.Conns connections of the box at once (a connection past that is
//     closed at once and recorded as a refusal, reason RefusedConnCap), and
//     all boxes of the process together stay under the grader's own limit
//     minus a reserve (GraderNoFile; past it a connection is closed and
//     recorded as the grader's break, never the box's refusal);
//   - doubts: a connection Check could not judge is the grader's break,
//     unless the box scanned (more than ScanPorts ports not its own refused
//     for sure): then the command's refusal;
//   - time: the guard closes a connection idle between requests after
//     IdleTimeout and one whose request header is not read within
//     ReadHeaderTimeout (harness/stubs, the scripted model and the bundled
//     server set the same on their own servers); a streaming answer is never
//     cut (no write timeout); a raw (non-HTTP) forwarded connection whose
//     upstream has hung up is closed HalfCloseGrace later;
//   - copy-out: every entry of {out} (directories, links, files, anything)
//     counts against MaxOutFiles; the walk stops there, the dropped list
//     keeps the first MaxDropped entries and counts the rest, and its time
//     (Status.CopyOutMillis) is part of the command's own time, which the
//     submission's budget is charged.
//
// Through the guard (Request.Guard) a box reaches only its own submission's
// sandboxes: a request on a sandbox-scoped route (SandboxRoute: /sandboxes/
// {id}/… and /v1/sandboxes/{id}/…, the server proxy routes included, with a
// key or without one) whose sandbox Request.Owns does not own is refused with
// 403 and recorded.
//
// Every box is recorded in a state file, so a grader that was SIGKILLed is
// cleaned up by the next start (Reap). What could not be enforced on this
// machine is said in Status.Degraded, never silently.
//
// That is level full (level.go). Where the machine allows less (root without
// CAP_SYS_ADMIN: an unprivileged container), Config.Level LevelUID makes a
// uid-level box instead (uidbox.go): a uid of its own without capabilities,
// rlimits, directories of its own other uids cannot read, every process of
// its uid killed at its end, and no namespace (Box.Path says where its
// inputs and outputs are). Choose picks the strongest level the machine
// allows; Holds and Lacks say what holds at each; Matrix measures the
// mechanisms (acceptance confine-probe).
//
// The paths a command sees in a full box are the same in every scenario: the submission at
// /capstone/submissions/<its directory's name>, {out} at /out, the input at
// /input/data.csv, $HOME at /home/student, {acceptance} at
// /capstone/bin/acceptance.
package confine

import (
	"fmt"
	"net/http"
	"time"
)

// Paths inside every box.
const (
	InsideRoot       = "/capstone/submissions"
	InsideOut        = "/out"
	InsideCSV        = "/input/data.csv"
	InsideHome       = "/home/student"
	InsideAcceptance = "/capstone/bin/acceptance"
	Hostname         = "capstone"
	UserName         = "student"
)

// Limits of one command. Zero fields take the defaults.
type Limits struct {
	Pids        int64 `json:"pids"`
	MemoryBytes int64 `json:"memory_bytes"`
	CPUMilli    int64 `json:"cpu_milli"`  // 1000 = one core
	DiskBytes   int64 `json:"disk_bytes"` // the tmpfs holding its copy, /tmp, $HOME and /out
	// NoFile is RLIMIT_NOFILE (soft and hard) of every process of the box.
	NoFile int64 `json:"nofile"`
	// Conns bounds the box's connections the grader's forwarder and guard
	// hold at once (each costs the grader's own descriptors).
	Conns int64 `json:"conns"`
}

// DefaultLimits are documented in docs/confinement.md.
var DefaultLimits = Limits{Pids: 512, MemoryBytes: 2 << 30, CPUMilli: 2000, DiskBytes: 1 << 30, NoFile: 1024, Conns: 256}

func (l Limits) withDefaults() Limits {
	if l.Pids <= 0 {
		l.Pids = DefaultLimits.Pids
	}
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultLimits.MemoryBytes
	}
	if l.CPUMilli <= 0 {
		l.CPUMilli = DefaultLimits.CPUMilli
	}
	if l.DiskBytes <= 0 {
		l.DiskBytes = DefaultLimits.DiskBytes
	}
	if l.NoFile <= 0 {
		l.NoFile = DefaultLimits.NoFile
	}
	if l.Conns <= 0 {
		l.Conns = DefaultLimits.Conns
	}
	return l
}

// Copy-out caps (docs/confinement.md).
const (
	MaxOutFileBytes  = 64 << 20  // one file of {out}
	MaxOutTotalBytes = 256 << 20 // all of {out}
	MaxOutFiles      = 1000      // entries of {out}: files, directories and everything else
	MaxDropped       = 200       // dropped entries listed (the rest counted)
	MaxOutDepth      = 8
	MaxCopyInBytes   = 512 << 20 // the submission directory copied in
)

// Config is the grader's side: where boxes are recorded, which uids they get.
type Config struct {
	Limits Limits
	// StateDir records live boxes and holds their uid locks and scratch
	// tmpfs mounts. Empty: DefaultStateDir.
	StateDir string
	// UIDBase, UIDCount: the uids boxes get (each held by one box at a time,
	// across every grader on the machine).
	UIDBase, UIDCount int
	// Unbounded turns the per-box bounds of issue 26 off: no RLIMIT_NOFILE
	// (the box inherits the grader's), no connection cap, no descriptor
	// reserve, no idle timeout on the guard, no sandbox-ownership check
	// (Request.Owns). Only for the side-by-side benchmark of their cost
	// (BenchmarkGradeProtections); the binary never sets it. The box's
	// Status says so in Degraded.
	Unbounded bool
	// Level: LevelUID makes uid-level boxes (uidbox.go); anything else the
	// full box.
	Level Level
	// LevelWhy: why this level and no stronger one (said in the status).
	LevelWhy string
}

// DefaultStateDir is where boxes are recorded.
const DefaultStateDir = "/run/acceptance-confine"

// Default uid range (no passwd entry on a normal host), disjoint from the
// bundled server's uid sandboxes' (cmd/acceptance's
// TestBoxAndSandboxUIDRangesAreDisjoint).
const (
	DefaultUIDBase  = 610000
	DefaultUIDCount = 4096
)

// Request is one command's box.
type Request struct {
	// Name names the box in its state record (for people reading it). The
	// box's own name (its scratch directory, netns and cgroup) is opaque: it
	// shows inside the box and must not tell the scenario.
	Name string
	// SubmissionDir is copied (writable, private) to InsideRoot/<base>.
	SubmissionDir string
	// ShowSiblings binds SubmissionDir's parent read-only at InsideRoot
	// (the copy stays over the submission's own place): a submission whose
	// commands use ../ paths (the calibration set's bad-* members).
	ShowSiblings bool
	// Files are host files visible read-only inside: inside path → host path.
	// The host path shows in the box (bwrap's command line is its pid 1's,
	// and /proc/self/mountinfo names a bind mount's source): only files whose
	// host path is the same in every scenario (the acceptance binary).
	Files map[string]string
	// Copies are host files copied into the box's own disk and visible there
	// read-only: inside path → host path. Their host path never shows inside
	// (a run's input lives under evidence/subject-<scenario>/, which would
	// tell a drill from a normal run). At most MaxCopyInBytes together.
	Copies map[string]string
	// ReadOnly are host directories visible read-only at the same path (the
	// pinned SDK venvs, tool directories on PATH).
	ReadOnly []string
	// Allow says whether a TCP connection to 127.0.0.1:port on the host is
	// this command's to make. Nil: nothing on the host is reachable.
	Allow func(port int) bool
	// Check, when set, is asked instead of Allow, and answers for the one
	// connection at once: ok, or refused; unsure, when not "", says why the
	// grader could not tell whether the port is the command's (its look-up
	// failed or did not finish). Such a connection is closed and recorded
	// as the grader's break (Status.Broken: a harness error if the command
	// then fails), never as the command's refused connection, unless the
	// box is scanning (ScanPorts).
	Check func(port int) (ok bool, unsure string)
	// Guard, when it returns a function for an allowed port, makes the
	// forwarder speak HTTP on that port: each request goes through only if
	// the function returns "" (else 403 and a refusal with its reason). The
	// bundled server's lifecycle port carries its admin API (/_mock/...),
	// which a command never reaches.
	Guard func(port int) func(r *http.Request) string
	// Owns, when set, is asked on every guarded port about a request on a
	// sandbox-scoped route (SandboxRoute): the request goes through only if
	// the sandbox is this command's submission's (mine), else 403 and a
	// refusal. An error (the grader could not tell) refuses it too. A
	// sandbox no one created (unknown to the server) may be said to be mine:
	// the server answers 404 for it.
	Owns func(sandboxID string) (mine bool, err error)
}

// Timeouts of the servers a box reaches (the guard's; harness/stubs and the
// bundled server set the same values). Idle applies between requests only:
// a long streaming answer (an SSE command stream) is never cut.
const (
	IdleTimeout       = 30 * time.Second
	ReadHeaderTimeout = 30 * time.Second
	// HalfCloseGrace: a forwarded raw connection whose upstream hung up is
	// closed this long after, whatever the box does.
	HalfCloseGrace = 10 * time.Second
)

// RefusedConnCap is the reason of a connection refused because the box held
// Limits.Conns already.
const RefusedConnCap = "connection cap"

// ScanPorts bounds the distinct ports not its own a command asks for before
// the box takes it for a port scan. A port counts once the box refused it
// for sure: Allow (or Check) said it is not the command's, having read
// everything, and no server of the box's own listened on it. An honest
// pipeline reaches its target, its model, the CSV and data stubs and its
// own sandboxes' endpoints, all allowed, and its own test servers, joined
// inside the box (not counted, however many): it is refused none (no
// command of the student-based and agent-reference members recorded on
// 2026-12-02 was, docs/confinement.md). A scan is refused by the thousand
// (hostile-saboteur: every loopback port).
//
// Past the bound, a connection the grader could not judge (Check unsure,
// or no answer within allowWait) is the command's refusal, its reason
// starting "scanning:", and no longer the grader's break: the look-ups it
// waited on are queued and slowed by its own flood, and an unsure refusal
// as the grader's break (a harness error when the command fails) would let
// any failing submission scan ports to turn its failures into harness
// errors. Which one a doubt is, is told when the status is read (after the
// command), so the first doubts of a scan, before it passed the bound, are
// its refusals too. Below the bound a doubt stays the grader's break (an
// audit read that failed, a target that answered no look-up in time while
// the command made few connections). The count is the box's own: a command
// never moves a classmate's box past it.
const ScanPorts = 64

// ScanReason is the start of the reason of a connection refused, unjudged,
// because its box was scanning (ScanPorts).
const ScanReason = "scanning"

// Refusal is a connection the box's network refused.
type Refusal struct {
	Time   time.Time `json:"time"`
	Addr   string    `json:"addr"` // where it was going
	Reason string    `json:"reason"`
	// Sandbox: the sandbox the request's route names, for an exchange the
	// guard broke on a sandbox-scoped route ("" otherwise). A judge reads it
	// to tell a break of the target's answer about a sandbox someone removed
	// on purpose (a drill, the command's own DELETE) from the grader's.
	Sandbox string `json:"sandbox,omitempty"`
}

// Status is what a box enforced and what it could not, per command.
type Status struct {
	// Mode: "confined" (everything enforced), "partial" (some of it, see
	// Degraded), "off" (the command ran unconfined, see Degraded).
	Mode string `json:"mode"`
	// Level is the confinement level (level.go): full, uid or none.
	Level    Level    `json:"level"`
	UID      int      `json:"uid,omitempty"`
	Enforced []string `json:"enforced"`
	Degraded []string `json:"degraded,omitempty"` // "what: why"
	Limits   *Limits  `json:"limits,omitempty"`
	// Refused: connections the network did not let through (first MaxRefusals).
	Refused      []Refusal `json:"refused,omitempty"`
	RefusedCount int       `json:"refused_count,omitempty"`
	// Broken: exchanges the grader's own forwarder or guard broke while the
	// command was still there to get an answer (its destination unreadable,
	// the upstream failing under the guard): the grader's fault, never the
	// command's (first MaxRefusals).
	Broken      []Refusal `json:"broken,omitempty"`
	BrokenCount int       `json:"broken_count,omitempty"`
	// CopyOut: files of {out} kept, and entries dropped with the reason.
	Copied []string `json:"copied,omitempty"`
	// Dropped: the first MaxDropped entries dropped ("path: reason"),
	// DroppedCount all of them (entries past the MaxOutFiles-th are not
	// walked: one line says so and counts once).
	Dropped      []string `json:"dropped,omitempty"`
	DroppedCount int      `json:"dropped_count,omitempty"`
	// CopyOutMillis is how long the copy-out took (the submission's time).
	CopyOutMillis int64 `json:"copy_out_ms,omitempty"`
	// Survivors: processes the end-of-command kill found still in the cgroup.
	Survivors int `json:"survivors,omitempty"`
	// Usage: the CPU and peak memory the box's cgroup counted (usage.go);
	// nil when the box had no cgroup.
	Usage *Usage `json:"usage,omitempty"`
}

// MaxRefusals bounds the refusals kept in a Status.
const MaxRefusals = 200

// Off is the status of a command run without confinement.
func Off(why string) *Status {
	return &Status{Mode: "off", Level: LevelNone, Enforced: []string{}, Degraded: []string{"confinement: " + why}}
}

func (s *Status) enforce(what string) { s.Enforced = append(s.Enforced, what) }
func (s *Status) degrade(what string, err error) {
	s.Degraded = append(s.Degraded, fmt.Sprintf("%s: %v", what, err))
}

// Worst is the weakest mode of several commands' statuses ("confined",
// "partial", "off"; "" when there is none).
func Worst(modes ...string) string {
	rank := map[string]int{"confined": 1, "partial": 2, "off": 3}
	w := ""
	for _, m := range modes {
		if rank[m] > rank[w] {
			w = m
		}
	}
	return w
}
