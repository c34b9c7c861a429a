package agent

import "syscall"

// shieldFromSandbox makes the agent non-dumpable (prctl PR_SET_DUMPABLE 0).
// Sandbox code runs as the same uid, but without CAP_SYS_PTRACE it can then
// neither ptrace the agent nor open its /proc/<pid> entries (fd, mem,
// environ), so the control descriptors (the events pipe on fd 5) and the
// agent's memory are out of its reach. Commands are unaffected: execve resets
// the flag for the programs they run.
func shieldFromSandbox() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return errno
	}
	return nil
}
