//go:build !linux

package dockertarget

import "syscall"

// serverProcAttr puts the control plane in its own process group; there is
// no parent-death signal off Linux (the docker target needs Linux anyway).
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
