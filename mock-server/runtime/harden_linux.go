//go:build linux

package runtime

import "golang.org/x/sys/unix"

// HardenAgent is called by the agent first thing. It makes the agent
// non-dumpable, so sandbox processes (same uid, no CAP_SYS_PTRACE) can
// neither open /proc/<agent>/fd/* (its control descriptors) or
// /proc/<agent>/mem nor ptrace it. Commands the agent starts are dumpable
// again after their execve, as in any container.
func HardenAgent() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
