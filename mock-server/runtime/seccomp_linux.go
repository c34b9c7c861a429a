//go:build linux

package runtime

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls answer EPERM inside every sandbox, as under Docker's default
// seccomp profile for a container without CAP_SYS_ADMIN and friends: kernel
// keyrings, mounts and namespaces, module and kexec loading, ptrace and
// cross-process memory access, clock and swap changes, BPF, perf, handle-based
// opens (the classic container escape), userfaultfd.
var deniedSyscalls = []string{
	"acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module", "delete_module",
	"finit_module", "get_kernel_syms", "init_module", "ioperm", "iopl", "kcmp", "kexec_file_load",
	"kexec_load", "keyctl", "lookup_dcookie", "mount", "move_mount", "fsopen", "fsconfig", "fsmount",
	"fspick", "open_tree", "mount_setattr", "name_to_handle_at", "nfsservctl", "open_by_handle_at",
	"perf_event_open", "pivot_root", "process_vm_readv", "process_vm_writev", "ptrace", "query_module",
	"quotactl", "reboot", "request_key", "setns", "settimeofday", "swapon", "swapoff", "sysfs", "_sysctl",
	"umount2", "unshare", "uselib", "userfaultfd", "ustat", "syslog", "vhangup", "pidfd_getfd",
	"fanotify_init", "open_tree_attr",
}

// cloneNamespaceFlags are CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET}: clone
// with any of them answers EPERM (Docker: allowed only with CAP_SYS_ADMIN).
const cloneNamespaceFlags = 0x7E020000

var (
	seccompOnce sync.Once
	seccompProg []byte
	seccompErr  error
)

// seccompProgram is the compiled filter (struct sock_filter[] in host byte
// order) bubblewrap loads with --seccomp FD. clone3 answers ENOSYS (so libc
// falls back to clone, whose flags the filter can inspect, as Docker does);
// a system call of another architecture (i386 int 0x80, x32) answers EPERM
// or ENOSYS instead of slipping past the filter.
func seccompProgram() ([]byte, error) {
	seccompOnce.Do(func() { seccompProg, seccompErr = buildSeccomp() })
	return seccompProg, seccompErr
}

func buildSeccomp() ([]byte, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(deniedSyscalls))
	for _, n := range deniedSyscalls {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	p := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionErrno, Names: names},
			{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{Name: "clone",
				Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags}}}}},
		},
	}
	if _, ok := info.SyscallNames["clone3"]; ok {
		p.Syscalls = append(p.Syscalls, seccomp.SyscallGroup{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}})
	}
	body, err := p.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp policy: %w", err)
	}
	// Any other architecture is refused before the policy (the library's
	// program lets a foreign architecture through to its default action).
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.EPERM)},
	}, body...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for _, in := range raw {
		_ = binary.Write(&buf, binary.NativeEndian, struct {
			Op     uint16
			Jt, Jf uint8
			K      uint32
		}{in.Op, in.Jt, in.Jf, in.K})
	}
	return buf.Bytes(), nil
}

// seccompFile is a pipe's read end holding the program, for bwrap --seccomp.
func seccompFile() (*os.File, error) {
	prog, err := seccompProgram()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if _, err := w.Write(prog); err != nil { // a few kB: fits the pipe buffer
		r.Close()
		return nil, err
	}
	return r, nil
}
