package dockertarget

import "syscall"

// serverProcAttr puts the control plane in its own process group and has the
// kernel send it SIGTERM if the harness dies first.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
