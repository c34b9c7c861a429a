package confine

import (
	"fmt"
	"strings"
)

// Level is how strongly a machine lets the grader confine a command
// (docs/confinement.md, "Levels"). The grader picks the strongest one the
// machine allows (Choose) and every report names it.
type Level string

// The levels, strongest first.
const (
	// LevelFull: the box of this package's doc (root with namespaces,
	// mounts, iptables and cgroups).
	LevelFull Level = "full"
	// LevelUserns: namespaces through an unprivileged user namespace.
	// Defined, not built: Choose never picks it (Docker's default seccomp
	// profile refuses unshare(CLONE_NEWUSER) anyway; docs/confinement.md).
	LevelUserns Level = "userns"
	// LevelUID: each command as a uid of its own with rlimits, no
	// namespaces (root without CAP_SYS_ADMIN: an unprivileged container).
	LevelUID Level = "uid"
	// LevelNone: the command runs unconfined, as the grader.
	LevelNone Level = "none"
)

// Levels are the levels, strongest first.
var Levels = []Level{LevelFull, LevelUserns, LevelUID, LevelNone}

// ClassMinimum is the weakest level `grade` accepts for more than one
// submission unless told otherwise (docs/confinement.md): below full, a
// command reaches every loopback port, and so the bundled server's keyless
// proxy route and execd ports of a classmate's sandboxes.
const ClassMinimum = LevelFull

func (l Level) rank() int {
	switch l {
	case LevelFull:
		return 4
	case LevelUserns:
		return 3
	case LevelUID:
		return 2
	case LevelNone:
		return 1
	}
	return 0
}

// Below says whether l is weaker than m.
func (l Level) Below(m Level) bool { return l.rank() < m.rank() }

// ParseLevel reads a level name; "auto" and "" are "" (let Choose pick).
func ParseLevel(s string) (Level, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case "", "auto":
		return "", nil
	case string(LevelFull), string(LevelUID), string(LevelNone):
		return Level(s), nil
	case string(LevelUserns):
		return "", fmt.Errorf("confinement level %q is not built (docs/confinement.md): use auto, full, uid or none", s)
	}
	return "", fmt.Errorf("unknown confinement level %q: use auto, full, uid or none", s)
}

// Weakest is the weakest of levels ("" when none is given or known).
func Weakest(levels ...Level) Level {
	var w Level
	for _, l := range levels {
		if l.rank() == 0 {
			continue
		}
		if w == "" || l.rank() < w.rank() {
			w = l
		}
	}
	return w
}

// Protection is one property of a confinement, and the levels where it
// holds.
type Protection struct {
	What  string
	Holds []Level
}

// Protections is the level table of docs/confinement.md: what holds at
// which level. LevelUserns holds nothing here (not built).
var Protections = []Protection{
	{"a uid of its own: classmates' processes (their keys in /proc/*/environ), the grader's memory and its files closed to it", []Level{LevelFull, LevelUID}},
	{"the grader non-dumpable (its /proc/<pid>/mem and environ closed to the grader's own uid)", []Level{LevelFull, LevelUID, LevelNone}},
	{"no capabilities, no_new_privs", []Level{LevelFull, LevelUID}},
	{"every process of the command killed at its end, however it was started (setsid, double fork)", []Level{LevelFull, LevelUID}},
	{"limits on processes, open files, file size and CPU (cgroup and tmpfs, or rlimits)", []Level{LevelFull, LevelUID}},
	{"a memory limit on the whole command (cgroup)", []Level{LevelFull}},
	{"a memory limit per process (RLIMIT_AS)", []Level{LevelUID}},
	{"a disk quota on everything it writes (tmpfs)", []Level{LevelFull}},
	{"the report bundles and the grader's state unreadable and unwritable to it", []Level{LevelFull, LevelUID}},
	{"the host's files hidden (only /usr, /etc and the SDK venvs shown, read-only)", []Level{LevelFull}},
	{"its own PID namespace: no other process of the machine visible", []Level{LevelFull}},
	{"its own network namespace: only the ports the grader allows (its own sandboxes, stubs, model)", []Level{LevelFull}},
	{"the admin API refused on the lifecycle port (guard)", []Level{LevelFull}},
	{"the admin API needs a token the command cannot read", []Level{LevelFull, LevelUID}},
	{"sandbox routes (the keyless proxy included) only for its own submission's sandboxes (guard)", []Level{LevelFull}},
	{"classmates' sandboxes' execd ports refuse it (its own network namespace; below full, on the bundled server, each execd's own access token)", []Level{LevelFull, LevelUID}},
	{"the same paths in every scenario (no tells)", []Level{LevelFull}},
	{"its own /tmp", []Level{LevelFull, LevelUID}},
}

// Holds lists what holds at level l.
func Holds(l Level) []string { return protections(l, true) }

// Lacks lists what does not hold at level l.
func Lacks(l Level) []string { return protections(l, false) }

func protections(l Level, holds bool) []string {
	out := []string{}
	for _, p := range Protections {
		in := false
		for _, h := range p.Holds {
			in = in || h == l
		}
		if in == holds {
			out = append(out, p.What)
		}
	}
	return out
}

// Choose picks the level commands run at: want ("" = the strongest the
// machine allows), with why the stronger levels are not available ("" when
// the level is full). A level asked for that the machine cannot give is an
// error.
func Choose(cfg Config, want Level) (Level, string, error) {
	switch want {
	case LevelNone:
		return LevelNone, "confinement level none was asked for", nil
	case LevelFull:
		if why := Probe(cfg); why != "" {
			return "", "", fmt.Errorf("confinement level full is not available here: %s", why)
		}
		return LevelFull, "", nil
	case LevelUID:
		if why := ProbeUID(cfg); why != "" {
			return "", "", fmt.Errorf("confinement level uid is not available here: %s", why)
		}
		return LevelUID, "confinement level uid was asked for", nil
	case "":
	default:
		return "", "", fmt.Errorf("confinement level %q cannot be chosen", want)
	}
	full := Probe(cfg)
	if full == "" {
		return LevelFull, "", nil
	}
	uid := ProbeUID(cfg)
	if uid == "" {
		return LevelUID, "level full is not available: " + full, nil
	}
	return LevelNone, "level full is not available: " + full + "; level uid is not available: " + uid, nil
}
