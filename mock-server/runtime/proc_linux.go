//go:build linux

package runtime

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procTable maps every visible pid to its parent pid.
func procTable() map[int]int {
	out := map[int]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out[pid] = ppid
	}
	return out
}

// descendants returns pid and every process below it.
func descendants(pid int) []int {
	if pid <= 0 {
		return nil
	}
	t := procTable()
	children := map[int][]int{}
	for p, pp := range t {
		children[pp] = append(children[pp], p)
	}
	var out []int
	if _, ok := t[pid]; ok {
		out = append(out, pid)
	}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// processesReferencing returns pids (other than ours) whose command line or
// working directory mentions dir: the host-side wrapper/nsenter/bwrap of a
// sandbox (their argv carries its directory) and insecure-mode agents.
func processesReferencing(dir string) []int {
	self := os.Getpid()
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil &&
			bytes.Contains(cmd, []byte(dir+"/")) {
			out = append(out, pid)
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil &&
			(cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			out = append(out, pid)
		}
	}
	return out
}

func killPids(pids []int, sig syscall.Signal) {
	for _, p := range pids {
		if p > 1 && p != os.Getpid() {
			_ = syscall.Kill(p, sig)
		}
	}
}

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}
